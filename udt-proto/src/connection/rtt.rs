//! RTT and RTT variance (protocol notes §1 "ACK, light ACK, ACK2"; UDT4 `CUDT::processCtrl`).
//!
//! The receiver measures samples from ACK/ACK2 pairs; the sender adopts the values carried in
//! full ACKs. Both smooth the same way: `var = (3 var + |sample - rtt|) / 4`, then
//! `rtt = (7 rtt + sample) / 8`. Start values: RTT 100 ms, variance 50 ms, until the first
//! sample, which replaces them (RFC 6298 §2.2: `rtt = sample`, `var = sample / 2`). UDT4 smooths
//! the first sample into its start values instead, so its reports take some 20 ACK2s to leave
//! 100 ms behind, whatever the path (docs/deviations.md W11). Integer microseconds, as on the
//! wire.

use std::time::Duration;

/// Smoothed RTT estimate in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    rtt_us: u64,
    var_us: u64,
    sampled: bool,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator { rtt_us: 100_000, var_us: 50_000, sampled: false }
    }
}

impl RttEstimator {
    /// Fold in one sample, in microseconds.
    pub fn update(&mut self, sample_us: u64) {
        if !self.sampled {
            self.sampled = true;
            self.rtt_us = sample_us;
            self.var_us = sample_us / 2;
            return;
        }
        let dev = self.rtt_us.abs_diff(sample_us);
        self.var_us = (self.var_us * 3 + dev) / 4;
        self.rtt_us = (self.rtt_us * 7 + sample_us) / 8;
    }

    /// Smoothed RTT in microseconds.
    pub fn rtt_us(&self) -> u64 {
        self.rtt_us
    }

    /// RTT variance in microseconds.
    pub fn var_us(&self) -> u64 {
        self.var_us
    }

    /// Smoothed RTT.
    pub fn rtt(&self) -> Duration {
        Duration::from_micros(self.rtt_us)
    }

    /// RTT variance.
    pub fn var(&self) -> Duration {
        Duration::from_micros(self.var_us)
    }

    /// RTT + 4 x variance: the "a response should have come by now" interval.
    pub fn rto_base(&self) -> Duration {
        Duration::from_micros(self.rtt_us + 4 * self.var_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_sample_replaces_the_start_values_then_udt4_smoothing() {
        // testdata/vectors/appclient_appserver: UDT4's ACK no. 2 reports RTT 87507 us, variance
        // 62485 us after one 57 us loopback sample smoothed into its start values; ours takes
        // the sample (W11), then smooths as UDT4 does.
        let mut r = RttEstimator::default();
        assert_eq!((r.rtt_us(), r.var_us()), (100_000, 50_000));
        r.update(57);
        assert_eq!((r.rtt_us(), r.var_us()), (57, 28));
        r.update(65);
        assert_eq!((r.rtt_us(), r.var_us()), ((57 * 7 + 65) / 8, (28 * 3 + 8) / 4));
    }
}
