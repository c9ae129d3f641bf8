//! UDT4's `TRACEINFO` (`CPerfMon`, udt.h of 4.11: the same fields, types and order) filled from
//! the runtime's [`udt::Snapshot`].

#![allow(non_snake_case)]

use udt::Snapshot;

/// A perfmon reading, laid out as UDT4's `CPerfMon`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CPerfMon {
    /// Time since the connection started, ms.
    pub msTimeStamp: i64,
    /// Data packets sent, retransmissions included.
    pub pktSentTotal: i64,
    /// Data packets received.
    pub pktRecvTotal: i64,
    /// Packets the sender learned were lost.
    pub pktSndLossTotal: i32,
    /// Packets the receiver found missing.
    pub pktRcvLossTotal: i32,
    /// Retransmitted packets.
    pub pktRetransTotal: i32,
    /// ACKs sent.
    pub pktSentACKTotal: i32,
    /// ACKs received.
    pub pktRecvACKTotal: i32,
    /// NAKs sent.
    pub pktSentNAKTotal: i32,
    /// NAKs received.
    pub pktRecvNAKTotal: i32,
    /// Time the sender had data to send, us.
    pub usSndDurationTotal: i64,
    /// As `pktSentTotal`, over the interval since the last clearing reading.
    pub pktSent: i64,
    /// As `pktRecvTotal`, over the interval.
    pub pktRecv: i64,
    /// As `pktSndLossTotal`, over the interval.
    pub pktSndLoss: i32,
    /// As `pktRcvLossTotal`, over the interval.
    pub pktRcvLoss: i32,
    /// As `pktRetransTotal`, over the interval.
    pub pktRetrans: i32,
    /// As `pktSentACKTotal`, over the interval.
    pub pktSentACK: i32,
    /// As `pktRecvACKTotal`, over the interval.
    pub pktRecvACK: i32,
    /// As `pktSentNAKTotal`, over the interval.
    pub pktSentNAK: i32,
    /// As `pktRecvNAKTotal`, over the interval.
    pub pktRecvNAK: i32,
    /// Sending rate over the interval, Mb/s.
    pub mbpsSendRate: f64,
    /// Receiving rate over the interval, Mb/s.
    pub mbpsRecvRate: f64,
    /// As `usSndDurationTotal`, over the interval.
    pub usSndDuration: i64,
    /// Packet-sending period, us.
    pub usPktSndPeriod: f64,
    /// Flow window, packets.
    pub pktFlowWindow: i32,
    /// Congestion window, packets.
    pub pktCongestionWindow: i32,
    /// Packets in flight.
    pub pktFlightSize: i32,
    /// RTT, ms.
    pub msRTT: f64,
    /// Estimated link capacity, Mb/s.
    pub mbpsBandwidth: f64,
    /// Free send buffer, bytes.
    pub byteAvailSndBuf: i32,
    /// Free receive buffer, bytes.
    pub byteAvailRcvBuf: i32,
}

fn int(v: u64) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

fn long(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl CPerfMon {
    /// The reading of `s` for a connection of MSS `mss`.
    pub fn from_snapshot(s: &Snapshot, mss: u32) -> CPerfMon {
        let (t, i, n) = (&s.total, &s.interval, &s.now);
        let payload = udt::Config::payload_size(mss.max(udt::proto::packet::MIN_MSS)) as f64;
        CPerfMon {
            msTimeStamp: long(s.elapsed.as_millis() as u64),
            pktSentTotal: long(t.pkts_sent),
            pktRecvTotal: long(t.pkts_recv),
            pktSndLossTotal: int(t.snd_loss),
            pktRcvLossTotal: int(t.rcv_loss),
            pktRetransTotal: int(t.retransmits),
            pktSentACKTotal: int(t.acks_sent),
            pktRecvACKTotal: int(t.acks_recv),
            pktSentNAKTotal: int(t.naks_sent),
            pktRecvNAKTotal: int(t.naks_recv),
            usSndDurationTotal: long(t.send_busy_us),
            pktSent: long(i.pkts_sent),
            pktRecv: long(i.pkts_recv),
            pktSndLoss: int(i.snd_loss),
            pktRcvLoss: int(i.rcv_loss),
            pktRetrans: int(i.retransmits),
            pktSentACK: int(i.acks_sent),
            pktRecvACK: int(i.acks_recv),
            pktSentNAK: int(i.naks_sent),
            pktRecvNAK: int(i.naks_recv),
            mbpsSendRate: s.send_mbps,
            mbpsRecvRate: s.recv_mbps,
            usSndDuration: long(i.send_busy_us),
            usPktSndPeriod: n.send_period_us,
            pktFlowWindow: int(n.flow_window.into()),
            pktCongestionWindow: n.congestion_window.min(i32::MAX as f64) as i32,
            pktFlightSize: int(n.flight.into()),
            msRTT: n.rtt_us as f64 / 1000.0,
            mbpsBandwidth: f64::from(n.bandwidth_pkts) * payload * 8.0 / 1e6,
            byteAvailSndBuf: int(n.send_buf_free_bytes),
            byteAvailRcvBuf: int(n.recv_buf_free_bytes),
        }
    }
}
