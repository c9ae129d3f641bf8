//! The TCP base class of Composable UDT (thesis §5.3.2, UDT4 demo `CTCP`): window-based,
//! ACK-clocked congestion control on which the TCP variants are written as [`TcpVariant`]s.
//!
//! [`Tcp<V>`] owns the window machinery every variant shares and asks its variant only for what
//! differs, the way the thesis' CTCP subclasses override `ACKAction` and `DupACKAction`:
//! * **Sending** is limited by the congestion window only (the variant may add a pacing period);
//!   the receiver acknowledges every `ack_every` packets (the factory's
//!   [`Policy::ack_interval`](crate::Policy::ack_interval), which the connection offers to the
//!   receiving end, whatever controller that end runs).
//! * **Slow start** (window below `ssthresh`): the window grows by [`TcpVariant::slow_start`]
//!   (default: the packets newly acknowledged, appropriate byte counting with no limit, because
//!   UDT's timer ACKs may acknowledge many packets at once).
//! * **Congestion avoidance**: the window grows by [`TcpVariant::increase`] per ACK (default Reno:
//!   newly acknowledged / window, one packet per RTT).
//! * **Loss**: a NAK is UDT's fast retransmit. The first report naming a packet sent after the
//!   last reduction starts a loss event: `ssthresh` becomes [`TcpVariant::ssthresh_after_loss`]
//!   (default half the window) and the window drops to it; reports about packets sent before the
//!   reduction belong to the same event (NewReno's recovery point, RFC 6582). The window is not
//!   inflated during recovery; the ACK that passes the recovery point ends it.
//! * **Timeout** (UDT's EXP timer): `ssthresh` from [`TcpVariant::ssthresh_after_timeout`]
//!   (default half the packets in flight), the window back to one packet, slow start again.
//!
//! Invariants: the window stays within `[MIN_WINDOW, max window]` and finite; `ssthresh` is at
//! least [`MIN_SSTHRESH`]; the variant sees the state only after the base has updated it for the
//! current event, and may change nothing but its own fields and what its return values say.
//!
//! Deviations from TCP: loss detection is UDT's (a NAK on the first gap instead of three duplicate
//! ACKs, no SACK scoreboard); retransmission is UDT's (loss list first); the retransmission timer
//! is UDT's EXP timer. The window dynamics are those of the variant.

use std::fmt;
use std::time::Duration;

use super::{CcContext, CcFactory, CongestionControl, Policy};
use udt_proto::seq::SeqNo;

/// The smallest congestion window, packets.
pub const MIN_WINDOW: f64 = 1.0;
/// The smallest slow-start threshold, packets (RFC 5681: 2 segments).
pub const MIN_SSTHRESH: f64 = 2.0;

/// Options shared by every TCP variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpConfig {
    /// The receiver acknowledges every this many packets (thesis CTCP: 2, like delayed ACKs).
    pub ack_every: u32,
    /// Initial window in packets (thesis CTCP: 2; RFC 3390 gives 2-4 for 1500-byte segments).
    pub initial_window: f64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig { ack_every: 2, initial_window: 2.0 }
    }
}

/// The window state a variant reads.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpState {
    /// Congestion window, packets.
    pub cwnd: f64,
    /// Slow-start threshold, packets.
    pub ssthresh: f64,
    /// The largest window allowed (the negotiated flow window), packets.
    pub max_window: f64,
    /// Next sequence number the peer expects, as of the last ACK.
    pub last_ack: SeqNo,
    /// The largest sequence number sent when the window was last reduced.
    pub recover: SeqNo,
    /// Between a loss event and the ACK that passes `recover`.
    pub in_recovery: bool,
}

impl TcpState {
    /// Whether the window is below `ssthresh`.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// What a TCP variant changes in the base (the overridable actions of the thesis' CTCP).
///
/// Every method has Reno's behaviour as its default, so NewReno is the empty variant.
pub trait TcpVariant: Send + fmt::Debug {
    /// Short name (`"newreno"`, `"cubic"`, ...).
    fn name(&self) -> &'static str;

    /// Window increase in slow start for `acked` newly acknowledged packets.
    fn slow_start(&mut self, _state: &TcpState, _ctx: &CcContext<'_>, acked: f64) -> f64 {
        acked
    }

    /// Window change in congestion avoidance for `acked` newly acknowledged packets (may be
    /// negative for delay-based variants). Reno: `acked / cwnd`.
    fn increase(&mut self, state: &TcpState, _ctx: &CcContext<'_>, acked: f64) -> f64 {
        acked / state.cwnd
    }

    /// The new `ssthresh` (and window) at the start of a loss event. Reno: half the window.
    fn ssthresh_after_loss(&mut self, state: &TcpState, _ctx: &CcContext<'_>) -> f64 {
        state.cwnd / 2.0
    }

    /// The new `ssthresh` on a timeout (the window becomes one packet). Default: half the
    /// packets in flight (RFC 5681 (4); UDT4's CTCP `pktFlightSize / 2`), or half the window when
    /// that is larger: after a reduction the flight can exceed the window, and a timeout that
    /// follows a mass loss must not leave the flow with a tiny threshold.
    fn ssthresh_after_timeout(&mut self, state: &TcpState, ctx: &CcContext<'_>) -> f64 {
        (f64::from(ctx.flight) / 2.0).max(state.cwnd / 2.0)
    }

    /// Called at `init` after the base reset its state.
    fn on_init(&mut self, _state: &TcpState, _ctx: &mut CcContext<'_>) {}

    /// Called for every ACK that acknowledges `acked > 0` new packets, before the window update.
    fn on_ack(&mut self, _state: &TcpState, _ctx: &mut CcContext<'_>, _ack: SeqNo, _acked: u32) {}

    /// Called for every data packet sent, before it leaves.
    fn on_packet_sent(&mut self, _ctx: &mut CcContext<'_>, _seq: SeqNo, _retransmission: bool) {}

    /// Called when the window leaves recovery (the ACK passed the recovery point).
    fn on_recovery_end(&mut self, _state: &TcpState, _ctx: &mut CcContext<'_>) {}

    /// Pacing: the interval between data packets (default none: ACK-clocked bursts).
    fn send_period(&self, _state: &TcpState) -> Duration {
        Duration::ZERO
    }
}

/// A window-based controller: the shared TCP machinery plus one variant.
#[derive(Debug)]
pub struct Tcp<V> {
    config: TcpConfig,
    state: TcpState,
    variant: V,
}

impl<V: TcpVariant> Tcp<V> {
    /// A controller with `config` and `variant`.
    pub fn new(config: TcpConfig, variant: V) -> Self {
        let iw = config.initial_window.max(MIN_WINDOW);
        Tcp {
            config,
            state: TcpState {
                cwnd: iw,
                ssthresh: f64::INFINITY,
                max_window: f64::INFINITY,
                last_ack: SeqNo::new(0),
                recover: SeqNo::new(0),
                in_recovery: false,
            },
            variant,
        }
    }

    /// The window state.
    pub fn state(&self) -> &TcpState {
        &self.state
    }

    /// The variant.
    pub fn variant(&self) -> &V {
        &self.variant
    }

    fn clamp(&mut self) {
        let s = &mut self.state;
        if !s.cwnd.is_finite() {
            s.cwnd = s.max_window.min(1e9);
        }
        s.cwnd = s.cwnd.clamp(MIN_WINDOW, s.max_window.max(MIN_WINDOW));
    }
}

impl<V: TcpVariant> CongestionControl for Tcp<V> {
    fn name(&self) -> &'static str {
        self.variant.name()
    }

    fn init(&mut self, ctx: &mut CcContext<'_>) {
        let s = &mut self.state;
        s.cwnd = self.config.initial_window.max(MIN_WINDOW);
        s.max_window = f64::from(ctx.max_window.max(2));
        s.ssthresh = s.max_window;
        s.last_ack = ctx.last_ack;
        s.recover = ctx.snd_curr_seq;
        s.in_recovery = false;
        self.variant.on_init(&self.state, ctx);
    }

    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        let newly = ack.diff(self.state.last_ack);
        if newly <= 0 {
            return;
        }
        self.state.max_window = f64::from(ctx.max_window.max(2));
        self.variant.on_ack(&self.state, ctx, ack, newly as u32);
        self.state.last_ack = ack;
        if self.state.in_recovery {
            if ack.is_after(self.state.recover) {
                self.state.in_recovery = false;
                self.state.cwnd = self.state.ssthresh;
                self.variant.on_recovery_end(&self.state, ctx);
                self.clamp();
            }
            return;
        }
        let acked = f64::from(newly as u32);
        let delta = if self.state.in_slow_start() {
            // Slow start never jumps past ssthresh: the rest of the ACK counts as avoidance.
            let grown = self.variant.slow_start(&self.state, ctx, acked);
            grown.min((self.state.ssthresh - self.state.cwnd).max(0.0))
        } else {
            self.variant.increase(&self.state, ctx, acked)
        };
        if delta.is_finite() {
            self.state.cwnd += delta;
        }
        self.clamp();
    }

    fn on_loss(&mut self, ctx: &mut CcContext<'_>, lost: &[(SeqNo, SeqNo)]) {
        let Some(&(first, _)) = lost.first() else { return };
        if !first.is_after(self.state.recover) {
            // Sent before the last reduction or timeout: the same loss event (a late NAK about
            // packets a timeout already resent must not reduce the window again).
            return;
        }
        let ssthresh = self.variant.ssthresh_after_loss(&self.state, ctx);
        let s = &mut self.state;
        s.ssthresh = if ssthresh.is_finite() { ssthresh.max(MIN_SSTHRESH) } else { s.cwnd.max(MIN_SSTHRESH) };
        s.cwnd = s.ssthresh;
        s.recover = ctx.snd_curr_seq;
        s.in_recovery = true;
        self.clamp();
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        let ssthresh = self.variant.ssthresh_after_timeout(&self.state, ctx);
        let s = &mut self.state;
        s.ssthresh = if ssthresh.is_finite() { ssthresh.max(MIN_SSTHRESH) } else { s.cwnd.max(MIN_SSTHRESH) };
        s.cwnd = MIN_WINDOW;
        s.recover = ctx.snd_curr_seq;
        s.in_recovery = false;
    }

    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, seq: SeqNo, retransmission: bool) {
        self.variant.on_packet_sent(ctx, seq, retransmission);
    }

    fn send_period(&self) -> Duration {
        self.variant.send_period(&self.state)
    }

    fn congestion_window(&self) -> f64 {
        self.state.cwnd
    }
}

/// Builds [`Tcp`] controllers from a config and a variant template.
pub struct TcpFactory<V> {
    config: TcpConfig,
    make: fn(&V) -> V,
    template: V,
}

impl<V: TcpVariant + Clone + Sync> TcpFactory<V> {
    /// Each controller gets a clone of `template`.
    pub fn new(config: TcpConfig, template: V) -> Self {
        TcpFactory { config, make: V::clone, template }
    }
}

impl<V: fmt::Debug> fmt::Debug for TcpFactory<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpFactory").field("config", &self.config).field("variant", &self.template).finish()
    }
}

impl<V: TcpVariant + Sync + 'static> CcFactory for TcpFactory<V> {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Tcp::new(self.config, (self.make)(&self.template)))
    }

    fn policy(&self) -> Policy {
        // TCP's delayed ACKs: the receiver acknowledges every `ack_every` packets.
        Policy::UDT4.with_ack_interval(Some(self.config.ack_every.max(1)))
    }
}

/// Test support: a context with the given facts, for scripted-event unit tests of variants.
#[cfg(test)]
pub(crate) mod script {
    use super::*;
    use rand_xoshiro::rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;
    use udt_proto::connection::Stats;
    use udt_proto::time::Instant;

    /// Facts of a scripted event.
    pub struct Script {
        pub stats: Stats,
        pub rng: Xoshiro256PlusPlus,
        pub now: Instant,
        pub rtt: Duration,
        pub sent: u32,
        pub max_window: u32,
    }

    impl Script {
        pub fn new() -> Self {
            Script {
                stats: Stats::new(Instant::ZERO),
                rng: Xoshiro256PlusPlus::seed_from_u64(7),
                now: Instant::ZERO,
                rtt: Duration::from_millis(100),
                sent: 0,
                max_window: 1_000_000,
            }
        }

        pub fn ctx(&mut self) -> CcContext<'_> {
            CcContext {
                now: self.now,
                mss: 1500,
                payload_size: 1456,
                syn_interval: Duration::from_millis(10),
                rtt: self.rtt,
                rtt_var: self.rtt / 4,
                recv_rate: 0,
                bandwidth: 0,
                snd_curr_seq: SeqNo::new(self.sent),
                last_ack: SeqNo::new(0),
                max_window: self.max_window,
                flight: 0,
                measured_send_period: None,
                stats: &self.stats,
                ack: None,
                peer_udt4: false,
                rng: &mut self.rng,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::script::Script;
    use super::*;

    #[derive(Clone, Debug)]
    struct Reno;
    impl TcpVariant for Reno {
        fn name(&self) -> &'static str {
            "reno-test"
        }
    }

    #[test]
    fn slow_start_recovery_avoidance_timeout() {
        let mut sc = Script::new();
        let mut cc = Tcp::new(TcpConfig { ack_every: 1, initial_window: 2.0 }, Reno);
        cc.init(&mut sc.ctx());
        assert_eq!(cc.congestion_window(), 2.0);
        assert_eq!(cc.state().ssthresh, 1_000_000.0);
        sc.sent = 40;
        for a in 1..=30 {
            cc.on_ack(&mut sc.ctx(), SeqNo::new(a));
        }
        assert_eq!(cc.congestion_window(), 32.0);
        // A repeated ACK changes nothing.
        cc.on_ack(&mut sc.ctx(), SeqNo::new(30));
        assert_eq!(cc.congestion_window(), 32.0);
        sc.sent = 60;
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(35), SeqNo::new(35))]);
        assert_eq!(cc.congestion_window(), 16.0);
        assert!(cc.state().in_recovery);
        // A second report from the same window does not reduce again.
        sc.sent = 61;
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(40), SeqNo::new(41))]);
        assert_eq!(cc.congestion_window(), 16.0);
        // ACKs inside recovery do not grow the window; passing the recovery point ends it.
        cc.on_ack(&mut sc.ctx(), SeqNo::new(50));
        assert_eq!(cc.congestion_window(), 16.0);
        cc.on_ack(&mut sc.ctx(), SeqNo::new(61));
        assert!(!cc.state().in_recovery);
        assert_eq!(cc.congestion_window(), 16.0);
        // Avoidance: 16 packets acknowledged at window 16 grow it by one.
        cc.on_ack(&mut sc.ctx(), SeqNo::new(77));
        assert_eq!(cc.congestion_window(), 17.0);
        // A loss after the recovery point is a new event.
        sc.sent = 90;
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(80), SeqNo::new(80))]);
        assert_eq!(cc.congestion_window(), 8.5);
        cc.on_timeout(&mut sc.ctx()); // nothing in flight in the script: half the window
        assert_eq!(cc.congestion_window(), 1.0);
        assert_eq!(cc.state().ssthresh, 4.25);
        assert_eq!(cc.send_period(), Duration::ZERO);
        let factory = TcpFactory::new(TcpConfig { ack_every: 1, initial_window: 2.0 }, Reno);
        assert_eq!(factory.policy().ack_interval, Some(1));
        assert_eq!(cc.name(), "reno-test");
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_window_respects_the_flow_window() {
        let mut sc = Script::new();
        sc.max_window = 64;
        let mut cc = Tcp::new(TcpConfig::default(), Reno);
        cc.init(&mut sc.ctx());
        sc.sent = 10_000;
        cc.on_ack(&mut sc.ctx(), SeqNo::new(1000));
        assert_eq!(cc.congestion_window(), 64.0);
        // Timeout: ssthresh 32, window 1; a huge ACK grows only to ssthresh.
        cc.on_timeout(&mut sc.ctx());
        cc.on_ack(&mut sc.ctx(), SeqNo::new(2000));
        assert_eq!(cc.congestion_window(), 32.0);
        assert_eq!(TcpFactory::new(TcpConfig::default(), Reno).policy().ack_interval, Some(2));
    }
}
