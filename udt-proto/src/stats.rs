//! Performance counters: UDT4's perfmon `TRACEINFO` (protocol notes §9).
//!
//! [`Stats`] keeps running totals; [`Stats::snapshot`] returns totals, the change since the
//! previous snapshot that asked to clear, and instant values. Counters only grow; "since last
//! query" is computed from a saved copy of the totals.

use std::time::Duration;

use crate::time::Instant;

/// Running totals of one connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Data packets sent, retransmissions included.
    pub pkts_sent: u64,
    /// Data packets received, duplicates included.
    pub pkts_recv: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes received (stored, not duplicate).
    pub bytes_recv: u64,
    /// Packets the sender learned were lost (from NAKs).
    pub snd_loss: u64,
    /// Packets the receiver detected missing.
    pub rcv_loss: u64,
    /// Retransmitted packets.
    pub retransmits: u64,
    /// Full and light ACKs sent.
    pub acks_sent: u64,
    /// ACKs received.
    pub acks_recv: u64,
    /// NAKs sent.
    pub naks_sent: u64,
    /// NAKs received.
    pub naks_recv: u64,
    /// ACK2s sent.
    pub ack2_sent: u64,
    /// ACK2s received.
    pub ack2_recv: u64,
    /// Duplicate data packets received.
    pub dup_recv: u64,
    /// Datagrams dropped as malformed, unexpected, or out of window.
    pub dropped_invalid: u64,
    /// Data packets dropped because the receive buffer had no room.
    pub dropped_no_room: u64,
    /// Messages dropped by TTL after being partly sent: a drop request went out (sender side).
    pub msgs_dropped_ttl: u64,
    /// Messages whose TTL passed before any packet was sent (sender side).
    pub msgs_expired_unsent: u64,
    /// Message drop requests received.
    pub drop_requests_recv: u64,
    /// EXP timer expiries.
    pub timeouts: u64,
    /// Head probes: the oldest unacknowledged packet sent again because its last
    /// retransmission had time to be acknowledged and was not (sender side).
    pub head_probes: u64,
    /// Microseconds during which the sender had data to send.
    pub send_busy_us: u64,
}

/// Values that are meaningful only now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InstantValues {
    /// Packet-sending period, microseconds.
    pub send_period_us: f64,
    /// Flow window, packets.
    pub flow_window: u32,
    /// Congestion window, packets.
    pub congestion_window: f64,
    /// Packets in flight.
    pub flight: u32,
    /// RTT, microseconds.
    pub rtt_us: u64,
    /// RTT variance, microseconds.
    pub rtt_var_us: u64,
    /// Estimated link capacity, packets/s.
    pub bandwidth_pkts: u32,
    /// Receiving rate reported by the peer, packets/s.
    pub recv_rate_pkts: u32,
    /// Free send buffer, bytes.
    pub send_buf_free_bytes: u64,
    /// Free receive buffer, bytes.
    pub recv_buf_free_bytes: u64,
}

/// A perfmon reading.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Time since the connection started.
    pub elapsed: Duration,
    /// Totals since the start.
    pub total: Counters,
    /// Change since the last clearing snapshot.
    pub interval: Counters,
    /// Length of that interval.
    pub interval_len: Duration,
    /// Send rate over the interval, Mb/s of payload.
    pub send_mbps: f64,
    /// Receive rate over the interval, Mb/s of payload.
    pub recv_mbps: f64,
    /// Instant values.
    pub now: InstantValues,
}

/// Per-connection statistics.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Running totals.
    pub total: Counters,
    start: Instant,
    last_clear: Instant,
    at_last_clear: Counters,
}

impl Stats {
    /// Statistics starting at `now`.
    pub fn new(now: Instant) -> Self {
        Stats { total: Counters::default(), start: now, last_clear: now, at_last_clear: Counters::default() }
    }

    /// A reading at `now` with the given instant values; `clear` starts a new interval.
    pub fn snapshot(&mut self, now: Instant, instant: InstantValues, clear: bool) -> Snapshot {
        let interval = self.total.minus(&self.at_last_clear);
        let interval_len = now - self.last_clear;
        let secs = interval_len.as_secs_f64();
        let mbps = |bytes: u64| if secs > 0.0 { bytes as f64 * 8.0 / secs / 1e6 } else { 0.0 };
        let snap = Snapshot {
            elapsed: now - self.start,
            total: self.total,
            interval,
            interval_len,
            send_mbps: mbps(interval.bytes_sent),
            recv_mbps: mbps(interval.bytes_recv),
            now: instant,
        };
        if clear {
            self.at_last_clear = self.total;
            self.last_clear = now;
        }
        snap
    }
}

impl Counters {
    /// Field-wise `self - earlier`.
    pub fn minus(&self, e: &Counters) -> Counters {
        Counters {
            pkts_sent: self.pkts_sent - e.pkts_sent,
            pkts_recv: self.pkts_recv - e.pkts_recv,
            bytes_sent: self.bytes_sent - e.bytes_sent,
            bytes_recv: self.bytes_recv - e.bytes_recv,
            snd_loss: self.snd_loss - e.snd_loss,
            rcv_loss: self.rcv_loss - e.rcv_loss,
            retransmits: self.retransmits - e.retransmits,
            acks_sent: self.acks_sent - e.acks_sent,
            acks_recv: self.acks_recv - e.acks_recv,
            naks_sent: self.naks_sent - e.naks_sent,
            naks_recv: self.naks_recv - e.naks_recv,
            ack2_sent: self.ack2_sent - e.ack2_sent,
            ack2_recv: self.ack2_recv - e.ack2_recv,
            dup_recv: self.dup_recv - e.dup_recv,
            dropped_invalid: self.dropped_invalid - e.dropped_invalid,
            dropped_no_room: self.dropped_no_room - e.dropped_no_room,
            msgs_dropped_ttl: self.msgs_dropped_ttl - e.msgs_dropped_ttl,
            msgs_expired_unsent: self.msgs_expired_unsent - e.msgs_expired_unsent,
            drop_requests_recv: self.drop_requests_recv - e.drop_requests_recv,
            timeouts: self.timeouts - e.timeouts,
            head_probes: self.head_probes - e.head_probes,
            send_busy_us: self.send_busy_us - e.send_busy_us,
        }
    }
}
