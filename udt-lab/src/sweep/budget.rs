//! How long each scenario of the sweep runs, and the bound on its work.
//!
//! A scenario runs for [`RUN_RTTS`] of its longest RTT, at least [`MIN_TIME`] (the SYN-clocked
//! controllers adjust every 10 ms whatever the RTT, and the thesis' takes about 7.5 s from zero
//! to 90% of a link), and is measured over the second half, past start-up. The work is bounded
//! by the data packets the run can simulate: at most the bottleneck's capacity, and at most
//! each flow's window (the smaller of its send buffer, receive buffer and flow window) per
//! round-trip propagation time. Where that bound over the planned time exceeds the packet cap,
//! the run is shortened to fit and marked `capped` (its start-up then weighs more in the
//! measures). The simulator runs at about 2 million data packets per second of wall time on
//! one core of this machine (release build), so the default cap, [`MAX_PACKETS`], bounds a run
//! to seconds.
//!
//! Invariant: the plan is a function of the scenario, the flows' configuration and the
//! budget, never of the machine: the same seed gives the same runs everywhere.

use std::time::Duration;

use serde::Serialize;

use super::draw::Drawn;

/// Run length in round-trip times of the longest RTT.
pub const RUN_RTTS: u32 = 100;
/// Shortest run.
pub const MIN_TIME: Duration = Duration::from_secs(10);
/// Default cap on the data packets one run may simulate.
pub const MAX_PACKETS: u64 = 10_000_000;
/// Samples per run; the second half is measured.
pub const SAMPLES: u32 = 100;

/// Bits on the wire per full-size data packet.
const PACKET_BITS: f64 = 1500.0 * 8.0;

/// The budget of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Budget {
    /// Run length in RTTs of the longest RTT.
    pub run_rtts: u32,
    /// Shortest run, s.
    pub min_time_s: f64,
    /// A fixed run length for every scenario instead, s.
    pub time_s: Option<f64>,
    /// Cap on the data packets of one run.
    pub max_packets: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            run_rtts: RUN_RTTS,
            min_time_s: MIN_TIME.as_secs_f64(),
            time_s: None,
            max_packets: MAX_PACKETS,
        }
    }
}

/// How one scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// Virtual time of each run, s.
    #[serde(rename = "time_s", serialize_with = "secs")]
    pub time: Duration,
    /// Measures start here, s.
    #[serde(rename = "measured_from_s", serialize_with = "secs")]
    pub warmup: Duration,
    /// Sampling interval, s.
    #[serde(rename = "sample_s", serialize_with = "secs")]
    pub sample: Duration,
    /// Upper bound on the data packets of a run over `time`.
    pub packet_bound: u64,
    /// Shortened to fit the packet cap.
    pub capped: bool,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Budget {
    /// The plan of `d` whose flows each have a window of `window_pkts` packets.
    pub fn plan(&self, d: &Drawn, window_pkts: u32) -> Plan {
        let rtts = d.rtts();
        let longest = rtts.iter().copied().max().unwrap_or(Duration::from_millis(1));
        let windows: f64 = rtts.iter().map(|r| f64::from(window_pkts) / r.as_secs_f64().max(1e-6)).sum();
        let rate_pps = (d.bw_bps as f64 / PACKET_BITS).min(windows).max(1.0);
        let wanted = match self.time_s {
            Some(t) => t.max(1e-3),
            None => (longest.as_secs_f64() * f64::from(self.run_rtts)).max(self.min_time_s),
        };
        let affordable = self.max_packets as f64 / rate_pps;
        let capped = wanted > affordable;
        let time_s = wanted.min(affordable);
        // A whole number of samples of whole microseconds.
        let sample = Duration::from_micros(((time_s * 1e6 / f64::from(SAMPLES)).round() as u64).max(1));
        let time = sample * SAMPLES;
        Plan {
            time,
            warmup: sample * (SAMPLES / 2),
            sample,
            packet_bound: (rate_pps * time.as_secs_f64()).ceil() as u64,
            capped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::draw::Loss;

    fn drawn(bw_bps: u64, rtts_ms: &[f64]) -> Drawn {
        Drawn {
            index: 0,
            bw_bps,
            rtt_ms: rtts_ms[0],
            udt_rtt_ms: rtts_ms.to_vec(),
            tcp_rtt_ms: None,
            queue_bdp: 1.0,
            queue_pkts: 100,
            forward_loss: Loss::None,
            reverse_loss: Loss::None,
            seed: 1,
        }
    }

    #[test]
    fn runs_long_enough_but_within_the_cap() {
        let b = Budget::default();
        // 10 Mb/s, 5 ms: the 10 s floor, measured over the second half.
        let p = b.plan(&drawn(10_000_000, &[5.0]), 8192);
        assert_eq!((p.time, p.warmup, p.capped), (Duration::from_secs(10), Duration::from_secs(5), false));
        // 100 RTTs of the longest RTT.
        let p = b.plan(&drawn(10_000_000, &[300.0, 600.0]), 8192);
        assert_eq!(p.time, Duration::from_secs(60));
        // 10 Gb/s x 1 s with windows of 10^6 packets: 100 s would be 83 M packets; capped.
        let p = b.plan(&drawn(10_000_000_000, &[1000.0]), 1_000_000);
        assert!(p.capped && p.packet_bound <= MAX_PACKETS + 1000, "{p:?}");
        // The same path with 8192-packet windows: 8192 packets per second, not capped.
        let p = b.plan(&drawn(10_000_000_000, &[1000.0]), 8192);
        assert!(!p.capped && p.packet_bound <= 8192 * 100 + 1, "{p:?}");
        // A fixed time.
        let p = Budget { time_s: Some(2.0), ..b }.plan(&drawn(10_000_000, &[5.0]), 8192);
        assert_eq!(p.time, Duration::from_secs(2));
    }
}
