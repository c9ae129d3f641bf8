//! One emulated path of the matrix (rate, RTT, random loss) and the emulator configuration
//! that makes it.
//!
//! Invariants: the path is symmetric in delay (half the RTT each way) and rate; random loss is
//! applied A to B only (the data direction: clients run in A, servers in B); each direction's
//! DropTail queue holds one bandwidth-delay product at the rate, at least
//! [`MIN_QUEUE_PACKETS`] full-size packets.

use std::time::Duration;

use serde::Serialize;
use udt_netem::{EmulatorConfig, LinkConfig, Loss, QueueLimit};

/// The smallest bottleneck queue, packets.
pub const MIN_QUEUE_PACKETS: u32 = 100;
/// Size of a full packet on the emulated link (the TUN MTU).
pub const PACKET_BYTES: u64 = 1500;

/// One path of the matrix.
#[derive(Clone, Debug, Serialize)]
pub struct PathSpec {
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Round-trip propagation delay, ms.
    pub rtt_ms: f64,
    /// Random loss A to B, percent.
    pub loss_percent: f64,
    /// The bottleneck queue in each direction, packets.
    pub queue_packets: u32,
}

impl PathSpec {
    /// The path at `rate_bps` with this RTT and loss; the queue is one BDP.
    pub fn new(rate_bps: u64, rtt_ms: f64, loss_percent: f64) -> PathSpec {
        let bdp_packets = (Self::bdp_of(rate_bps, rtt_ms) / PACKET_BYTES as f64).ceil();
        let queue_packets = (bdp_packets as u32).max(MIN_QUEUE_PACKETS);
        PathSpec { rate_bps, rtt_ms, loss_percent, queue_packets }
    }

    fn bdp_of(rate_bps: u64, rtt_ms: f64) -> f64 {
        rate_bps as f64 / 8.0 * rtt_ms / 1000.0
    }

    /// Bandwidth-delay product, bytes.
    pub fn bdp_bytes(&self) -> u64 {
        Self::bdp_of(self.rate_bps, self.rtt_ms).ceil() as u64
    }

    /// The round-trip time.
    pub fn rtt(&self) -> Duration {
        Duration::from_secs_f64(self.rtt_ms / 1000.0)
    }

    /// `100 Mb/s, RTT 10 ms, loss 0.1%` (a table heading).
    pub fn label(&self) -> String {
        format!(
            "{:.0} Mb/s, RTT {} ms, loss {}% (A to B), queue {} packets",
            self.rate_bps as f64 / 1e6,
            self.rtt_ms,
            self.loss_percent,
            self.queue_packets
        )
    }

    /// `rtt100-loss0.1` (a file-name part).
    pub fn slug(&self) -> String {
        format!("rtt{}-loss{}", self.rtt_ms, self.loss_percent)
    }

    /// The emulator configuration (its forwarders at real-time priority), in namespaces `{prefix}A` and `{prefix}B`.
    pub fn emulator_config(&self, prefix: &str) -> EmulatorConfig {
        let back = LinkConfig {
            rate_bps: self.rate_bps,
            queue: QueueLimit::Packets(self.queue_packets),
            delay: self.rtt() / 2,
            ..LinkConfig::default()
        };
        let loss = if self.loss_percent > 0.0 {
            Loss::Bernoulli { p: self.loss_percent / 100.0 }
        } else {
            Loss::None
        };
        let forward = LinkConfig { loss, ..back.clone() };
        EmulatorConfig {
            ns_a: format!("{prefix}A"),
            ns_b: format!("{prefix}B"),
            a_to_b: forward,
            b_to_a: back,
            // The link must not be late because the hosts at its ends are busy: on a 2-core
            // machine the sender and receiver otherwise delay its releases into bursts, which
            // no real link makes.
            realtime: Some(REALTIME_PRIORITY),
            ..EmulatorConfig::default()
        }
    }
}

/// `SCHED_FIFO` priority of the emulator's forwarders (as `udt netem --realtime`).
const REALTIME_PRIORITY: u8 = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_is_one_bdp_at_least_100_packets() {
        let p = PathSpec::new(100_000_000, 100.0, 0.0);
        assert_eq!(p.bdp_bytes(), 1_250_000);
        assert_eq!(p.queue_packets, 834);
        assert_eq!(PathSpec::new(100_000_000, 10.0, 0.0).queue_packets, 100);
        let c = PathSpec::new(50_000_000, 20.0, 1.0).emulator_config("x");
        assert_eq!(c.a_to_b.delay, Duration::from_millis(10));
        assert_eq!(c.a_to_b.loss, Loss::Bernoulli { p: 0.01 });
        assert_eq!(c.b_to_a.loss, Loss::None);
        assert_eq!(c.realtime, Some(REALTIME_PRIORITY));
        c.validate().unwrap();
    }
}
