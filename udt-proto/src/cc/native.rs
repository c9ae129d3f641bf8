//! The UDT native congestion control (thesis §2.2.5, §3.2-3.5; UDT4 4.11 `CUDTCC`).

use std::time::Duration;

use super::{CcContext, CongestionControl};
use crate::seq::SeqNo;

/// Options of the native algorithm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NativeConfig {
    /// Ignore the first loss of each congestion event (thesis §3.5.2). Default off.
    pub noisy_link: bool,
    /// Stop sending for one SYN after a congestion event (thesis §2.2.5). Default on.
    pub freeze_on_congestion: bool,
    /// Correct the current period with the measured sending period before updating it
    /// (thesis §2.3.2.4). Default on.
    pub rate_correction: bool,
    /// Initial congestion window in packets (UDT4: 16; thesis: 2). Default 16.
    pub initial_window: f64,
}

impl Default for NativeConfig {
    fn default() -> Self {
        NativeConfig {
            noisy_link: false,
            freeze_on_congestion: true,
            rate_correction: true,
            initial_window: 16.0,
        }
    }
}

/// State of the native algorithm.
#[derive(Debug)]
pub struct NativeCc {
    config: NativeConfig,
}

impl NativeCc {
    /// A controller with `config`.
    pub fn new(config: NativeConfig) -> Self {
        NativeCc { config }
    }
}

impl CongestionControl for NativeCc {
    fn name(&self) -> &'static str {
        "udt"
    }
    fn send_period(&self) -> Duration {
        todo!()
    }
    fn congestion_window(&self) -> f64 {
        todo!()
    }
}

#[allow(dead_code)]
fn _unused(_: SeqNo, _: &mut CcContext<'_>) {}
