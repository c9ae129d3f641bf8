//! A TCP-like reference flow for friendliness experiments: a window-based NewReno-style
//! congestion control running on the same UDT core.
//!
//! * Sending is limited by the congestion window only (the packet-sending period is zero), so
//!   the flow is ACK-clocked and bursty like TCP.
//! * Slow start: the window grows by the packets newly acknowledged (appropriate byte counting,
//!   RFC 3465, with L = the ACK interval) until `ssthresh`; congestion avoidance: by newly
//!   acknowledged / window per ACK (about one packet per RTT).
//! * A loss report (UDT's NAK, sent as soon as the receiver sees a gap: the analogue of fast
//!   retransmit) halves the window once per window of data: reports naming packets sent before
//!   the last reduction are part of the same loss event (NewReno's recovery point); the window
//!   is not inflated during recovery.
//! * A timeout sets `ssthresh` to half the window and the window to one packet (slow start).
//! * The receiver acknowledges every packet or every other packet (`ack_interval`), which is why
//!   the receiving side of a TCP-like flow must use this controller too.
//!
//! Deviations from TCP: loss detection is UDT's (a NAK on the first gap, no three-duplicate-ACK
//! threshold, no SACK scoreboard); retransmissions are UDT's (from the loss list, first); the
//! retransmission timer is UDT's EXP timer. The window dynamics are NewReno's.

use std::time::Duration;

use udt_proto::cc::{CcContext, CcFactory, CongestionControl};
use udt_proto::SeqNo;

/// Options of the TCP-like controller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewRenoConfig {
    /// The receiver acknowledges every this many packets (1 or 2, like TCP with delayed ACKs).
    pub ack_every: u32,
    /// Initial window in packets (RFC 3390 gives 2-4 for 1500-byte segments).
    pub initial_window: f64,
}

impl Default for NewRenoConfig {
    fn default() -> Self {
        NewRenoConfig { ack_every: 2, initial_window: 2.0 }
    }
}

/// Factory for [`NewReno`].
#[derive(Clone, Copy, Debug, Default)]
pub struct NewRenoFactory(pub NewRenoConfig);

impl CcFactory for NewRenoFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(NewReno::new(self.0))
    }
}

/// The TCP-like window controller.
#[derive(Debug)]
pub struct NewReno {
    config: NewRenoConfig,
    cwnd: f64,
    ssthresh: f64,
    /// Next sequence expected by the peer at the last ACK.
    last_ack: SeqNo,
    /// Largest sequence sent when the window was last reduced.
    recover: SeqNo,
    in_recovery: bool,
}

impl NewReno {
    /// A controller with `config`.
    pub fn new(config: NewRenoConfig) -> Self {
        NewReno {
            config,
            cwnd: config.initial_window.max(1.0),
            ssthresh: f64::INFINITY,
            last_ack: SeqNo::new(0),
            recover: SeqNo::new(0),
            in_recovery: false,
        }
    }

    /// Slow-start threshold in packets.
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    fn reduce(&mut self, ctx: &CcContext<'_>) {
        self.ssthresh = (self.cwnd / 2.0).max(2.0);
        self.recover = ctx.snd_curr_seq;
        self.in_recovery = true;
    }
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn init(&mut self, ctx: &mut CcContext<'_>) {
        self.cwnd = self.config.initial_window.max(1.0);
        self.ssthresh = f64::from(ctx.max_window.max(2));
        self.last_ack = ctx.last_ack;
        self.recover = ctx.snd_curr_seq;
        self.in_recovery = false;
    }

    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        let newly = ack.diff(self.last_ack);
        if newly <= 0 {
            return;
        }
        self.last_ack = ack;
        if self.in_recovery {
            if ack.is_after(self.recover) {
                // Full acknowledgement of the window that saw the loss: leave recovery.
                self.in_recovery = false;
                self.cwnd = self.ssthresh;
            }
            return;
        }
        let newly = f64::from(newly as u32);
        if self.cwnd < self.ssthresh {
            self.cwnd += newly.min(f64::from(self.config.ack_every.max(1)));
        } else {
            self.cwnd += newly / self.cwnd;
        }
        let cap = f64::from(ctx.max_window.max(2));
        self.cwnd = self.cwnd.min(cap);
    }

    fn on_loss(&mut self, ctx: &mut CcContext<'_>, lost: &[(SeqNo, SeqNo)]) {
        let Some(&(first, _)) = lost.first() else { return };
        if self.in_recovery && !first.is_after(self.recover) {
            return; // the same loss event
        }
        self.reduce(ctx);
        self.cwnd = self.ssthresh;
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        self.reduce(ctx);
        self.in_recovery = false;
        self.cwnd = 1.0;
    }

    fn send_period(&self) -> Duration {
        Duration::ZERO
    }

    fn congestion_window(&self) -> f64 {
        self.cwnd
    }

    fn ack_interval(&self) -> Option<u32> {
        Some(self.config.ack_every.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;
    use udt_proto::connection::Stats;
    use udt_proto::Instant;

    fn ctx<'a>(stats: &'a Stats, rng: &'a mut rand_xoshiro::Xoshiro256PlusPlus, sent: u32) -> CcContext<'a> {
        CcContext {
            now: Instant::ZERO,
            mss: 1500,
            payload_size: 1456,
            syn_interval: Duration::from_millis(10),
            rtt: Duration::from_millis(10),
            rtt_var: Duration::from_millis(1),
            recv_rate: 0,
            bandwidth: 0,
            snd_curr_seq: SeqNo::new(sent),
            last_ack: SeqNo::new(0),
            max_window: 10_000,
            flight: 0,
            measured_send_period: None,
            stats,
            rng,
        }
    }

    #[test]
    fn slow_start_then_halving_once_per_window() {
        let stats = Stats::new(Instant::ZERO);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let mut cc = NewReno::new(NewRenoConfig { ack_every: 1, initial_window: 2.0 });
        cc.init(&mut ctx(&stats, &mut rng, 0));
        for a in 1..=30 {
            cc.on_ack(&mut ctx(&stats, &mut rng, 40), SeqNo::new(a));
        }
        assert_eq!(cc.congestion_window(), 32.0);
        cc.on_loss(&mut ctx(&stats, &mut rng, 60), &[(SeqNo::new(35), SeqNo::new(35))]);
        assert_eq!(cc.congestion_window(), 16.0);
        // A second report from the same window does not reduce again.
        cc.on_loss(&mut ctx(&stats, &mut rng, 61), &[(SeqNo::new(40), SeqNo::new(41))]);
        assert_eq!(cc.congestion_window(), 16.0);
        // Acknowledging past the recovery point ends recovery; then one packet per window.
        cc.on_ack(&mut ctx(&stats, &mut rng, 70), SeqNo::new(61));
        assert_eq!(cc.congestion_window(), 16.0);
        cc.on_ack(&mut ctx(&stats, &mut rng, 70), SeqNo::new(77));
        assert_eq!(cc.congestion_window(), 17.0);
        // A loss after the recovery point is a new event.
        cc.on_loss(&mut ctx(&stats, &mut rng, 90), &[(SeqNo::new(80), SeqNo::new(80))]);
        assert_eq!(cc.congestion_window(), 8.5);
        cc.on_timeout(&mut ctx(&stats, &mut rng, 90));
        assert_eq!(cc.congestion_window(), 1.0);
        assert_eq!(cc.send_period(), Duration::ZERO);
        assert_eq!(cc.ack_interval(), Some(1));
    }
}
