//! A fixed-rate controller: constant packet-sending period, large window (UDT4 demo `CUDPBlast`).
//!
//! The period is either given directly or derived from a rate in bits per second as
//! `MSS * 8 / rate` (UDT4 `CUDPBlast::setRate`: `m_dPktSndPeriod = (m_iMSS * 8.0) / mbps`), so
//! the rate counts whole MSS-sized packets. A rate of zero means "unlimited": a period of
//! [`UNLIMITED_PERIOD`] (1 us, the native algorithm's slow-start period), leaving the flow window
//! as the only limit; a zero period is avoided so that pacers never see a degenerate interval.
//!
//! udt-cc's `BlastFactory` builds controllers whose rate an application changes while they run
//! (the thesis' `CUDPBlast` `setRate`, §5.3.1) on top of this one.
//!
//! Invariants: the controller never reacts to network events; the period only changes through
//! the setters and, when the rate was given in bits per second, at `init`,
//! which recomputes it for the negotiated MSS (a factory does not know the MSS when it builds
//! the controller).

use std::time::Duration;

use super::{CcContext, CongestionControl};

/// The congestion window of a fixed-rate controller, packets: large enough that the flow window
/// (at most the receiver's buffer) is always the binding limit.
pub const FIXED_WINDOW: f64 = 100_000.0;

/// The period used for a rate of zero ("unlimited").
pub const UNLIMITED_PERIOD: Duration = Duration::from_micros(1);

/// The MSS assumed until `init` supplies the negotiated one (UDT4's default).
pub const DEFAULT_MSS: u32 = 1500;

/// Sends at a constant period that can be changed at run time.
#[derive(Debug)]
pub struct FixedRate {
    period: Duration,
    window: f64,
    /// The rate, when it was set in bits per second (the period follows the MSS then).
    bits_per_sec: Option<u64>,
    /// Packet size the rate is converted with, bytes.
    mss: u32,
}

/// `mss * 8 / bits_per_sec` seconds, rounded to the nanosecond, at least 1 ns; zero rate:
/// [`UNLIMITED_PERIOD`].
pub fn period_for(bits_per_sec: u64, mss: u32) -> Duration {
    if bits_per_sec == 0 {
        return UNLIMITED_PERIOD;
    }
    // UDT4 CUDPBlast::setRate: m_dPktSndPeriod = (m_iMSS * 8.0) / mbps (microseconds); here in
    // integer nanoseconds: mss * 8 * 1e9 / bits, rounded half up.
    let bits = u128::from(bits_per_sec);
    let nanos = (u128::from(mss) * 8 * 1_000_000_000 + bits / 2) / bits;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX).max(1))
}

impl FixedRate {
    /// A controller sending one packet every `period`, window `window` packets.
    pub fn new(period: Duration, window: f64) -> Self {
        FixedRate { period, window, bits_per_sec: None, mss: DEFAULT_MSS }
    }

    /// A controller sending `bits_per_sec` of `mss`-byte packets (period `mss * 8 / rate`; zero:
    /// unlimited, see the module docs), window [`FIXED_WINDOW`]. `init` recomputes the period
    /// with the connection's negotiated MSS.
    pub fn from_bits_per_sec(bits_per_sec: u64, mss: u32) -> Self {
        FixedRate {
            period: period_for(bits_per_sec, mss),
            window: FIXED_WINDOW,
            bits_per_sec: Some(bits_per_sec),
            mss,
        }
    }

    /// Change the rate.
    pub fn set_period(&mut self, period: Duration) {
        self.period = period;
        self.bits_per_sec = None;
    }

    /// Change the rate to `bits_per_sec` of packets of the current MSS (zero: unlimited).
    pub fn set_rate_bits_per_sec(&mut self, bits_per_sec: u64) {
        self.bits_per_sec = Some(bits_per_sec);
        self.period = period_for(bits_per_sec, self.mss);
    }

    /// The packet size rates are converted with, bytes: the negotiated MSS after `init`.
    pub fn mss(&self) -> u32 {
        self.mss
    }

    /// The rate in bits per second, when it was set that way.
    pub fn bits_per_sec(&self) -> Option<u64> {
        self.bits_per_sec
    }
}

impl CongestionControl for FixedRate {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn init(&mut self, ctx: &mut CcContext<'_>) {
        self.mss = ctx.mss;
        if let Some(bits) = self.bits_per_sec {
            self.period = period_for(bits, self.mss);
        }
    }

    fn send_period(&self) -> Duration {
        self.period
    }

    fn congestion_window(&self) -> f64 {
        self.window
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::Stats;
    use crate::seq::SeqNo;
    use crate::time::Instant;
    use rand_xoshiro::rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn init_with_mss(cc: &mut dyn CongestionControl, mss: u32) {
        let stats = Stats::new(Instant::ZERO);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut ctx = CcContext {
            now: Instant::ZERO,
            mss,
            payload_size: mss - 44,
            syn_interval: Duration::from_millis(10),
            rtt: Duration::from_millis(100),
            rtt_var: Duration::from_millis(50),
            recv_rate: 0,
            bandwidth: 0,
            snd_curr_seq: SeqNo::new(0),
            last_ack: SeqNo::new(1),
            max_window: 25_600,
            flight: 0,
            measured_send_period: None,
            stats: &stats,
            ack: None,
            peer_udt4: false,
            rng: &mut rng,
        };
        cc.init(&mut ctx);
    }

    #[test]
    fn period_from_bits_per_second() {
        // 1500 * 8 = 12000 bits per packet.
        assert_eq!(FixedRate::from_bits_per_sec(12_000_000, 1500).send_period(), Duration::from_millis(1));
        assert_eq!(
            FixedRate::from_bits_per_sec(1_000_000_000, 1500).send_period(),
            Duration::from_micros(12)
        );
        // 12000 / 7e6 s = 1714.2857 us -> 1714286 ns (rounded).
        assert_eq!(
            FixedRate::from_bits_per_sec(7_000_000, 1500).send_period(),
            Duration::from_nanos(1_714_286)
        );
        // Absurdly high rates keep a positive period.
        assert_eq!(FixedRate::from_bits_per_sec(u64::MAX, 1500).send_period(), Duration::from_nanos(1));
        let cc = FixedRate::from_bits_per_sec(12_000_000, 1500);
        assert_eq!(cc.congestion_window(), FIXED_WINDOW);
        assert_eq!(cc.bits_per_sec(), Some(12_000_000));
        assert_eq!(cc.name(), "fixed");
    }

    #[test]
    fn zero_rate_is_unlimited() {
        assert_eq!(FixedRate::from_bits_per_sec(0, 1500).send_period(), UNLIMITED_PERIOD);
        let mut cc = FixedRate::from_bits_per_sec(12_000_000, 1500);
        cc.set_rate_bits_per_sec(0);
        assert_eq!(cc.send_period(), UNLIMITED_PERIOD);
    }

    #[test]
    fn setters_change_the_rate() {
        let mut cc = FixedRate::from_bits_per_sec(12_000_000, 1500);
        cc.set_rate_bits_per_sec(24_000_000);
        assert_eq!(cc.send_period(), Duration::from_micros(500));
        cc.set_period(Duration::from_micros(40));
        assert_eq!(cc.send_period(), Duration::from_micros(40));
        assert_eq!(cc.bits_per_sec(), None);
        // Outputs are pure reads; events change nothing.
        assert_eq!(cc.take_pause(), None);
        assert_eq!(cc.send_period(), Duration::from_micros(40));
    }

    #[test]
    fn init_uses_the_negotiated_mss() {
        let mut cc = FixedRate::from_bits_per_sec(72_000_000, 1500);
        assert_eq!(cc.send_period(), Duration::from_nanos(166_667));
        init_with_mss(&mut cc, 9000); // 72000 bits per packet
        assert_eq!(cc.send_period(), Duration::from_millis(1));
        cc.set_rate_bits_per_sec(144_000_000);
        assert_eq!(cc.send_period(), Duration::from_micros(500));

        // A period set directly is kept.
        let mut cc = FixedRate::new(Duration::from_micros(30), 64.0);
        init_with_mss(&mut cc, 9000);
        assert_eq!(cc.send_period(), Duration::from_micros(30));
        assert_eq!(cc.congestion_window(), 64.0);
    }
}
