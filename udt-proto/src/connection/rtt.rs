//! RTT and RTT variance (protocol notes §1 "ACK, light ACK, ACK2"; UDT4 `CUDT::processCtrl`).
//!
//! The receiver measures samples from ACK/ACK2 pairs; the sender adopts the values carried in
//! full ACKs. Both smooth the same way: `var = (3 var + |sample - rtt|) / 4`, then
//! `rtt = (7 rtt + sample) / 8`. Start values: RTT 100 ms, variance 50 ms. Integer microseconds,
//! as on the wire.

use std::time::Duration;

/// Smoothed RTT estimate in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    rtt_us: u64,
    var_us: u64,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator { rtt_us: 100_000, var_us: 50_000 }
    }
}

impl RttEstimator {
    /// Fold in one sample, in microseconds.
    pub fn update(&mut self, sample_us: u64) {
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
    fn matches_udt4_smoothing_on_the_captured_ack() {
        // testdata/vectors/appclient_appserver: ACK no. 2 reports RTT 87507 us, variance
        // 62485 us after one ACK2 sample from the start values; a 57 us loopback sample gives
        // exactly that.
        let mut r = RttEstimator::default();
        r.update(57);
        assert_eq!((r.rtt_us(), r.var_us()), (87_507, 62_485));
    }
}
