//! TCP Westwood+ (Mascolo, Casetti, Gerla, Sanadidi, Wang, "TCP Westwood: Bandwidth Estimation
//! for Enhanced Transport over Wireless Links", MobiCom 2001; the Westwood+ per-RTT sampling of
//! Grieco and Mascolo 2004, as Linux `tcp_westwood`) as a [`TcpVariant`]: Reno's increase, and on
//! a loss a window sized to the bandwidth the ACKs show, instead of half the window.
//!
//! * **Bandwidth estimate** (BWE): the packets acknowledged are counted over sampling intervals
//!   of at least one RTT (and at least 50 ms, Linux's `TCP_WESTWOOD_RTT_MIN`, so short RTTs do
//!   not make the samples noisy); each interval gives one sample `acked / interval`, in packets per
//!   second. Two low-pass filters in series smooth the samples, each `new = (7 old + sample) / 8`
//!   (Linux `westwood_filter`); the first sample initialises both.
//! * **RTTmin**: the smallest RTT seen, from the connection's smoothed RTT at each ACK (UDT's
//!   sender sees no raw RTT samples, only the value the receiver reports in full ACKs).
//! * **Loss event**: `ssthresh = BWE × RTTmin` packets (the paper's `BWE * RTTmin / seg_size`
//!   with BWE in packets), at least 2 and at most the current window, and the window drops to it.
//!   Without queueing this is about the window (random losses barely reduce it, the point of
//!   Westwood on lossy links); with a queue it is the window that empties the queue.
//! * **Timeout**: the same threshold, the window to 1 packet, and RTTmin is measured afresh (Linux
//!   resets it on `CA_EVENT_LOSS`, since a timeout may mean the path changed).
//! * Slow start and the increase in congestion avoidance are Reno's.
//!
//! Before the first bandwidth sample (less than an RTT of ACKs) a loss halves the window as Reno;
//! Linux would use its floor of 2 packets. The cap at the current window is ours: an estimate that
//! lags a falling rate must not make a loss grow the window.
//!
//! A consequence of the filters worth knowing: during slow start the rate doubles every RTT and
//! the twice-filtered estimate lags it by several RTTs, so the loss that ends a long slow start
//! sets the window to a fraction of the path's BDP (measured in the simulator on 1 Gb/s, 100 ms:
//! 690 packets for a BDP of 8300), and Reno's increase then takes the time Reno would take. Linux's
//! Westwood+ uses the same two filters.
//!
//! Response function: none in closed form. The window after a loss is `BWE × RTTmin`, about
//! `RTTmin / RTT` of the window: hardly a reduction when the queue is empty (random losses), a
//! halving when a queue of one BDP is full. The response depends on the queue when losses happen,
//! not on `p` alone.
//!
//! Invariants: `bwe >= 0` and finite (0: no sample yet); the sampling interval restarts at every
//! sample.

use std::time::Duration;

use super::tcp::{TcpState, TcpVariant};
use super::CcContext;
use udt_proto::seq::SeqNo;
use udt_proto::time::Instant;

/// The shortest bandwidth sampling interval (Linux `TCP_WESTWOOD_RTT_MIN`).
pub const MIN_SAMPLE_INTERVAL: Duration = Duration::from_millis(50);

/// TCP Westwood+.
#[derive(Clone, Debug, Default)]
pub struct Westwood {
    /// Once-filtered bandwidth, packets/s.
    bw_ns_est: f64,
    /// Twice-filtered bandwidth (BWE), packets/s; 0 before the first sample.
    bw_est: f64,
    /// The smallest RTT seen since the last reset.
    rtt_min: Option<Duration>,
    /// Start of the current sampling interval.
    sample_start: Option<Instant>,
    /// Packets acknowledged in the current sampling interval.
    sample_acked: u64,
}

fn filter(old: f64, sample: f64) -> f64 {
    (7.0 * old + sample) / 8.0
}

impl Westwood {
    /// The bandwidth estimate, packets per second (0 before the first sample).
    pub fn bandwidth(&self) -> f64 {
        self.bw_est
    }

    /// The smallest RTT seen.
    pub fn rtt_min(&self) -> Option<Duration> {
        self.rtt_min
    }

    /// BWE × RTTmin in packets, when both are known.
    pub fn bdp(&self) -> Option<f64> {
        let rtt_min = self.rtt_min?;
        (self.bw_est > 0.0).then_some(self.bw_est * rtt_min.as_secs_f64())
    }

    fn ssthresh(&self, state: &TcpState) -> f64 {
        match self.bdp() {
            Some(w) => w.min(state.cwnd).max(2.0),
            None => state.cwnd / 2.0,
        }
    }
}

impl TcpVariant for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    fn on_init(&mut self, _state: &TcpState, ctx: &mut CcContext<'_>) {
        *self = Westwood { sample_start: Some(ctx.now), ..Westwood::default() };
    }

    fn on_ack(&mut self, _state: &TcpState, ctx: &mut CcContext<'_>, _ack: SeqNo, acked: u32) {
        if !ctx.rtt.is_zero() {
            self.rtt_min = Some(self.rtt_min.map_or(ctx.rtt, |m| m.min(ctx.rtt)));
        }
        let start = *self.sample_start.get_or_insert(ctx.now);
        self.sample_acked += u64::from(acked);
        let elapsed = ctx.now - start;
        if elapsed < ctx.rtt.max(MIN_SAMPLE_INTERVAL) {
            return;
        }
        let sample = self.sample_acked as f64 / elapsed.as_secs_f64();
        if self.bw_est == 0.0 {
            self.bw_ns_est = sample;
            self.bw_est = sample;
        } else {
            self.bw_ns_est = filter(self.bw_ns_est, sample);
            self.bw_est = filter(self.bw_est, self.bw_ns_est);
        }
        self.sample_start = Some(ctx.now);
        self.sample_acked = 0;
    }

    fn ssthresh_after_loss(&mut self, state: &TcpState, _ctx: &CcContext<'_>) -> f64 {
        self.ssthresh(state)
    }

    fn ssthresh_after_timeout(&mut self, state: &TcpState, _ctx: &CcContext<'_>) -> f64 {
        let ssthresh = self.ssthresh(state);
        self.rtt_min = None;
        ssthresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::script::Script;
    use crate::tcp::{Tcp, TcpConfig};
    use crate::CongestionControl;

    /// ACKs of `per_ack` packets every `gap` until `until`, from `*seq`.
    fn ack_stream(
        sc: &mut Script,
        cc: &mut Tcp<Westwood>,
        seq: &mut u32,
        per_ack: u32,
        gap: Duration,
        until: Instant,
    ) {
        while sc.now < until {
            sc.now += gap;
            *seq += per_ack;
            sc.sent = sc.sent.max(*seq + 10);
            cc.on_ack(&mut sc.ctx(), SeqNo::new(*seq));
        }
    }

    #[test]
    fn halves_before_the_first_sample() {
        let mut sc = Script::new();
        let mut cc = Tcp::new(TcpConfig::default(), Westwood::default());
        cc.init(&mut sc.ctx());
        let mut seq = 0;
        ack_stream(&mut sc, &mut cc, &mut seq, 2, Duration::from_millis(1), Instant::from_micros(40_000));
        assert_eq!(cc.variant().bandwidth(), 0.0);
        let w = cc.congestion_window();
        sc.sent = seq + 100;
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(seq + 1), SeqNo::new(seq + 1))]);
        assert_eq!(cc.congestion_window(), w / 2.0);
    }

    #[test]
    fn samples_span_an_rtt_and_at_least_50_ms() {
        let mut sc = Script::new();
        sc.rtt = Duration::from_millis(20);
        let mut cc = Tcp::new(TcpConfig::default(), Westwood::default());
        cc.init(&mut sc.ctx());
        let mut seq = 0;
        ack_stream(&mut sc, &mut cc, &mut seq, 2, Duration::from_millis(1), Instant::from_micros(49_000));
        assert_eq!(cc.variant().bandwidth(), 0.0);
        ack_stream(&mut sc, &mut cc, &mut seq, 2, Duration::from_millis(1), Instant::from_micros(50_000));
        assert_eq!(cc.variant().bandwidth(), 2000.0);
        // At an RTT of 200 ms, the next sample waits 200 ms.
        sc.rtt = Duration::from_millis(200);
        ack_stream(&mut sc, &mut cc, &mut seq, 4, Duration::from_millis(1), Instant::from_micros(249_000));
        assert_eq!(cc.variant().bandwidth(), 2000.0);
        ack_stream(&mut sc, &mut cc, &mut seq, 4, Duration::from_millis(1), Instant::from_micros(250_000));
        // Sample 4000/s: once-filtered 2250, twice-filtered (7 x 2000 + 2250) / 8.
        assert_eq!(cc.variant().bandwidth(), (7.0 * 2000.0 + 2250.0) / 8.0);
    }

    #[test]
    fn bandwidth_estimate_sizes_the_window_after_a_loss() {
        let mut sc = Script::new();
        sc.rtt = Duration::from_millis(100);
        let mut cc = Tcp::new(TcpConfig::default(), Westwood::default());
        cc.init(&mut sc.ctx());
        // 2 packets per 2 ms = 1000 packets/s for 1 s at an RTT of 100 ms (slow start throughout).
        let mut seq = 0;
        ack_stream(&mut sc, &mut cc, &mut seq, 2, Duration::from_millis(2), Instant::from_micros(1_000_000));
        let bw = cc.variant().bandwidth();
        assert!((bw - 1000.0).abs() < 1e-6, "{bw}");
        assert_eq!(cc.variant().rtt_min(), Some(Duration::from_millis(100)));
        // Queueing builds: the RTT grows to 150 ms; RTTmin and the rate stay.
        sc.rtt = Duration::from_millis(150);
        ack_stream(&mut sc, &mut cc, &mut seq, 2, Duration::from_millis(2), Instant::from_micros(1_500_000));
        let w = cc.congestion_window();
        assert!(w > 1000.0, "{w}");
        sc.sent = seq + 1000;
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(seq + 1), SeqNo::new(seq + 1))]);
        // BWE x RTTmin = 1000/s x 100 ms.
        let bdp = cc.variant().bdp().unwrap();
        assert!((bdp - 100.0).abs() < 1e-6, "{bdp}");
        assert_eq!(cc.congestion_window(), bdp);
        assert_eq!(cc.state().ssthresh, bdp);
        assert_eq!(cc.name(), "westwood");
    }

    #[test]
    fn never_grows_on_a_loss_and_timeout_resets_rtt_min() {
        let mut sc = Script::new();
        sc.rtt = Duration::from_millis(20);
        let mut cc = Tcp::new(TcpConfig::default(), Westwood::default());
        cc.init(&mut sc.ctx());
        let mut seq = 0;
        // 20000 packets/s for 1 s; a loss before the first sample ends slow start at about 200
        // packets, and Reno's increase keeps the window below 300.
        ack_stream(&mut sc, &mut cc, &mut seq, 2, Duration::from_micros(100), Instant::from_micros(20_000));
        sc.sent = seq + 50;
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(seq + 1), SeqNo::new(seq + 1))]);
        ack_stream(
            &mut sc,
            &mut cc,
            &mut seq,
            2,
            Duration::from_micros(100),
            Instant::from_micros(1_000_000),
        );
        // BWE x RTTmin = 400 packets, above the window: the window is kept, not grown.
        let w = cc.congestion_window();
        assert!(cc.variant().bdp().unwrap() > w, "{:?} {w}", cc.variant().bdp());
        sc.sent = seq + 1000;
        cc.on_loss(&mut sc.ctx(), &[(SeqNo::new(seq + 1), SeqNo::new(seq + 1))]);
        assert_eq!(cc.congestion_window(), w);
        cc.on_timeout(&mut sc.ctx());
        assert_eq!(cc.congestion_window(), 1.0);
        assert_eq!(cc.variant().rtt_min(), None);
        sc.rtt = Duration::from_millis(30);
        ack_stream(
            &mut sc,
            &mut cc,
            &mut seq,
            2,
            Duration::from_micros(100),
            Instant::from_micros(1_001_000),
        );
        assert_eq!(cc.variant().rtt_min(), Some(Duration::from_millis(30)));
    }
}
