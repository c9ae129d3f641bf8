//! TCP NewReno (thesis §5.3.2 `CTCP`; RFC 5681, RFC 6582): the [`TcpVariant`] with every
//! default, i.e. slow start, one packet per RTT in congestion avoidance, half the window per loss
//! event, once per window of data.
//!
//! Invariants: stateless; all window state lives in the [`Tcp`](super::tcp::Tcp) base.

use super::tcp::TcpVariant;

/// TCP NewReno: Reno's increase and decrease on the shared TCP base.
#[derive(Clone, Copy, Debug, Default)]
pub struct NewReno;

impl TcpVariant for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::script::Script;
    use crate::tcp::{Tcp, TcpConfig};
    use crate::CongestionControl;
    use udt_proto::seq::SeqNo;

    #[test]
    fn one_packet_per_window_and_halving() {
        let mut sc = Script::new();
        let mut cc = Tcp::new(TcpConfig { ack_every: 2, initial_window: 2.0 }, NewReno);
        cc.init(&mut sc.ctx());
        sc.sent = 1000;
        cc.on_ack(&mut sc.ctx(), SeqNo::new(98)); // slow start: 2 + 98
        assert_eq!(cc.congestion_window(), 100.0);
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(99), SeqNo::new(99))]);
        assert_eq!(cc.congestion_window(), 50.0);
        sc.sent = 2000;
        cc.on_ack(&mut sc.ctx(), SeqNo::new(1001)); // ends recovery at ssthresh 50
                                                    // A window's worth of ACKs (two packets each) adds one packet.
        for i in 0..25 {
            cc.on_ack(&mut sc.ctx(), SeqNo::new(1003 + 2 * i));
        }
        assert!((cc.congestion_window() - 51.0).abs() < 0.02, "{}", cc.congestion_window());
        assert_eq!(cc.name(), "newreno");
    }
}
