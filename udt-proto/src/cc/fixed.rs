//! A fixed-rate controller: constant packet-sending period, large window (UDT4 demo `CUDPBlast`).

use std::time::Duration;

use super::CongestionControl;

/// Sends at a constant period that can be changed at run time.
#[derive(Debug)]
pub struct FixedRate {
    period: Duration,
    window: f64,
}

impl FixedRate {
    /// A controller sending one packet every `period`, window `window` packets.
    pub fn new(period: Duration, window: f64) -> Self {
        FixedRate { period, window }
    }
    /// A controller sending `bits_per_sec` of `mss`-byte packets.
    pub fn from_bits_per_sec(bits_per_sec: u64, mss: u32) -> Self {
        todo!()
    }
    /// Change the rate.
    pub fn set_period(&mut self, period: Duration) {
        self.period = period;
    }
}

impl CongestionControl for FixedRate {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn send_period(&self) -> Duration {
        self.period
    }
    fn congestion_window(&self) -> f64 {
        self.window
    }
}
