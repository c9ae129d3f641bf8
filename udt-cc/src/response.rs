//! Test support: the response function of a TCP variant measured on the real [`Tcp`] base, so a
//! variant's documented `w(p)` is checked, not only stated.
//!
//! The model is the one response functions are derived with (RFC 3649 §5, Kelly 2003, RFC 9438
//! §5.1): a fixed RTT, no queue, an ACK clock that delivers the window once per RTT, and one loss
//! event per `1/p` packets, exactly periodic. Each ACK acknowledges `n` packets and advances the
//! clock by `n * RTT / cwnd`, with `n` one packet for small windows and `cwnd / 256` for large ones
//! (the variants scale their per-ACK change with the packets acknowledged, so a coarser ACK clock
//! only saves time). As in those derivations the reduction is
//! instantaneous: the loss is reported as the packet just acknowledged with nothing else in
//! flight, so the next ACK passes the recovery point and the window grows again at once. (A real
//! NewReno recovery holds the window for about an RTT, which lowers the mean window by about one
//! RTT in the cycle's length: 4-7% for the cycles of tens of RTTs used here.)
//!
//! The result is the mean window in the sense of the response functions: packets delivered per
//! RTT, measured over whole loss cycles after a warm-up.

use std::time::Duration;

use super::tcp::script::Script;
use super::tcp::{Tcp, TcpConfig, TcpVariant};
use super::CongestionControl;
use udt_proto::seq::SeqNo;
use udt_proto::time::Instant;

/// A deterministic-loss run.
#[derive(Clone, Copy, Debug)]
pub struct Loss {
    /// Loss events per packet.
    pub p: f64,
    /// The round-trip time.
    pub rtt: Duration,
    /// Loss cycles before measuring.
    pub warmup: u32,
    /// Loss cycles measured.
    pub cycles: u32,
    /// End the first slow start with a loss at this window rather than after `1/p` packets (slow
    /// start overshoots the steady state by far, and some variants come down from above slowly).
    pub first_at: Option<f64>,
}

impl Loss {
    /// One loss per `1/p` packets, RTT 100 ms, 40 + 20 cycles.
    pub fn periodic(p: f64) -> Self {
        Loss { p, rtt: Duration::from_millis(100), warmup: 40, cycles: 20, first_at: None }
    }
}

/// Packets per RTT over the measured cycles (see the module documentation).
pub fn mean_window<V: TcpVariant>(variant: V, loss: Loss) -> f64 {
    let mut sc = Script::new();
    sc.rtt = loss.rtt;
    sc.max_window = 1 << 30;
    let mut cc = Tcp::new(TcpConfig { ack_every: 1, initial_window: 2.0 }, variant);
    cc.init(&mut sc.ctx());
    let period = (1.0 / loss.p).round().max(1.0) as u64;
    let rtt_ns = loss.rtt.as_nanos() as f64;
    let (mut acked, mut now_ns, mut losses) = (0u64, 0f64, 0u32);
    let mut next_loss = period;
    let mut start = (0u64, 0f64);
    loop {
        let cwnd = cc.congestion_window();
        let step = (cwnd / 256.0).max(1.0) as u64;
        now_ns += step as f64 * rtt_ns / cwnd;
        acked += step;
        sc.now = Instant::from_nanos(now_ns as u64);
        sc.sent = (acked + cwnd.ceil() as u64) as u32;
        cc.on_ack(&mut sc.ctx(), SeqNo::new(acked as u32));
        let first = losses == 0 && loss.first_at.is_some_and(|w| cc.congestion_window() >= w);
        if acked >= next_loss || first {
            next_loss = if first { acked + period } else { next_loss + period };
            sc.sent = acked as u32;
            let lost = SeqNo::new(sc.sent);
            cc.on_loss(&mut sc.ctx(), &[(lost, lost)]);
            losses += 1;
            if losses == loss.warmup {
                start = (acked, now_ns);
            } else if losses == loss.warmup + loss.cycles {
                return (acked - start.0) as f64 / (now_ns - start.1) * rtt_ns;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::newreno::NewReno;

    /// The model reproduces Reno's `sqrt(3 / (2p))` (1.22/sqrt(p)).
    #[test]
    fn reno_response() {
        for p in [1e-3, 1e-4] {
            let w = mean_window(NewReno, Loss::periodic(p));
            let expect = (1.5 / p).sqrt();
            assert!((w / expect - 1.0).abs() < 0.05, "p={p}: {w} vs {expect}");
        }
    }
}
