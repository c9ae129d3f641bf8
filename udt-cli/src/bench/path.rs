//! One emulated path of the matrix (rate, RTT, random loss each way) and the emulator
//! configuration that makes it; [`ReverseLoss`], how `--reverse-loss` sets the loss of the
//! return direction.
//!
//! Invariants: the path is symmetric in delay (half the RTT each way) and rate; random loss is
//! independent (Bernoulli) in each direction, `loss_percent` A to B (the data direction:
//! clients run in A, servers in B) and `reverse_loss_percent` B to A (ACKs, NAKs, ACK2 and
//! TCP's ACKs); each direction's DropTail queue holds one bandwidth-delay product at the
//! rate, at least [`MIN_QUEUE_PACKETS`] full-size packets.

use std::time::Duration;

use serde::Serialize;
use udt_netem::{EmulatorConfig, LinkConfig, Loss, QueueLimit};

use super::steps::RateChange;

/// The smallest bottleneck queue, packets.
pub const MIN_QUEUE_PACKETS: u32 = 100;
/// Size of a full packet on the emulated link (the TUN MTU).
pub const PACKET_BYTES: u64 = 1500;

/// The random loss B to A (the return direction), as `--reverse-loss` gives it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReverseLoss {
    /// Each path's data-direction loss.
    Same,
    /// This percentage on every path.
    Percent(f64),
}

impl ReverseLoss {
    /// `same`, or a loss as `--loss` takes it (`0.1%`, `0.001`), kept in per cent.
    pub fn parse(s: &str) -> Result<ReverseLoss, String> {
        if s.trim().eq_ignore_ascii_case("same") {
            return Ok(ReverseLoss::Same);
        }
        parse_loss(s).map(ReverseLoss::Percent)
    }

    /// The reverse loss, percent, of a path whose data direction loses `loss_percent`.
    pub fn of(self, loss_percent: f64) -> f64 {
        match self {
            ReverseLoss::Same => loss_percent,
            ReverseLoss::Percent(p) => p,
        }
    }
}

/// A loss in the grammar of [`udt_units`] (`0.1%` or the fraction `0.001`), in per cent.
pub fn parse_loss(s: &str) -> Result<f64, String> {
    udt_units::Fraction::parse(s).map(|f| f.percent()).map_err(|e| e.to_string())
}

/// One path of the matrix.
#[derive(Clone, Debug, Serialize)]
pub struct PathSpec {
    /// Bottleneck rate (both directions), bits per second.
    pub rate_bps: u64,
    /// Round-trip propagation delay, ms.
    pub rtt_ms: f64,
    /// Random loss A to B (data), percent.
    pub loss_percent: f64,
    /// Random loss B to A (acknowledgements), percent.
    pub reverse_loss_percent: f64,
    /// The bottleneck queue in each direction, packets.
    pub queue_packets: u32,
    /// Jitter of the one-way delay each way, ms (uniform in +-jitter, never reordering).
    #[serde(skip_serializing_if = "is_zero")]
    pub jitter_ms: f64,
    /// Changes of the bottleneck's rate (both directions) during each run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rate_steps: Vec<RateChange>,
}

/// `100`, `1.5`: a rate in Mb/s without trailing zeros.
pub fn mbps(rate_bps: u64) -> String {
    format!("{}", rate_bps as f64 / 1e6)
}

impl PathSpec {
    /// The path at `rate_bps` with this RTT and loss each way; the queue is one BDP.
    pub fn new(rate_bps: u64, rtt_ms: f64, loss_percent: f64, reverse_loss_percent: f64) -> PathSpec {
        let bdp_packets = (Self::bdp_of(rate_bps, rtt_ms) / PACKET_BYTES as f64).ceil();
        let queue_packets = (bdp_packets as u32).max(MIN_QUEUE_PACKETS);
        PathSpec {
            rate_bps,
            rtt_ms,
            loss_percent,
            reverse_loss_percent,
            queue_packets,
            jitter_ms: 0.0,
            rate_steps: Vec::new(),
        }
    }

    fn bdp_of(rate_bps: u64, rtt_ms: f64) -> f64 {
        rate_bps as f64 / 8.0 * rtt_ms / 1000.0
    }

    /// `, jitter +-1 ms` where the path has jitter.
    fn jitter_label(&self) -> String {
        if self.jitter_ms > 0.0 {
            format!(", jitter +-{} ms", self.jitter_ms)
        } else {
            String::new()
        }
    }

    /// Bandwidth-delay product, bytes.
    pub fn bdp_bytes(&self) -> u64 {
        Self::bdp_of(self.rate_bps, self.rtt_ms).ceil() as u64
    }

    /// The round-trip time.
    pub fn rtt(&self) -> Duration {
        Duration::from_secs_f64(self.rtt_ms / 1000.0)
    }

    /// `100 Mb/s, RTT 10 ms, loss 0.1% / 0.1% (A to B / B to A), queue 100 packets` (a table
    /// heading).
    pub fn label(&self) -> String {
        let steps: String =
            self.rate_steps.iter().map(|s| format!(", x{} from {} s", s.factor, s.at_s)).collect();
        format!(
            "{} Mb/s{steps}, RTT {} ms{}, loss {}% / {}% (A to B / B to A), queue {} packets",
            mbps(self.rate_bps),
            self.rtt_ms,
            self.jitter_label(),
            self.loss_percent,
            self.reverse_loss_percent,
            self.queue_packets
        )
    }

    /// `100mbit-rtt100-loss0.1-rev0.1` (a file-name part, distinct for distinct paths).
    pub fn slug(&self) -> String {
        let steps: String = self.rate_steps.iter().map(|s| format!("-x{}at{}", s.factor, s.at_s)).collect();
        let jitter = if self.jitter_ms > 0.0 { format!("-jit{}", self.jitter_ms) } else { String::new() };
        format!(
            "{}mbit{steps}-rtt{}{jitter}-loss{}-rev{}",
            mbps(self.rate_bps),
            self.rtt_ms,
            self.loss_percent,
            self.reverse_loss_percent
        )
    }

    /// The emulator configuration (its forwarders at real-time priority), in namespaces `{prefix}A` and `{prefix}B`.
    pub fn emulator_config(&self, prefix: &str) -> EmulatorConfig {
        let link = |loss_percent: f64| LinkConfig {
            rate_bps: self.rate_bps,
            queue: QueueLimit::Packets(self.queue_packets),
            rate_steps: super::steps::emulator_steps(&self.rate_steps, self.rate_bps),
            delay: self.rtt() / 2,
            jitter: Duration::from_secs_f64(self.jitter_ms / 1e3),
            loss: bernoulli(loss_percent),
            ..LinkConfig::default()
        };
        EmulatorConfig {
            ns_a: format!("{prefix}A"),
            ns_b: format!("{prefix}B"),
            a_to_b: link(self.loss_percent),
            b_to_a: link(self.reverse_loss_percent),
            // The link must not be late because the hosts at its ends are busy: on a 2-core
            // machine the sender and receiver otherwise delay its releases into bursts, which
            // no real link makes.
            realtime: Some(REALTIME_PRIORITY),
            ..EmulatorConfig::default()
        }
    }
}

/// No jitter: the field is left out of the JSON.
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Independent loss of `percent`, none at 0.
fn bernoulli(percent: f64) -> Loss {
    if percent > 0.0 {
        Loss::Bernoulli { p: percent / 100.0 }
    } else {
        Loss::None
    }
}

/// `SCHED_FIFO` priority of the emulator's forwarders (as `udt netem --realtime`).
const REALTIME_PRIORITY: u8 = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_is_one_bdp_at_least_100_packets() {
        let p = PathSpec::new(100_000_000, 100.0, 0.0, 0.0);
        assert_eq!(p.bdp_bytes(), 1_250_000);
        assert_eq!(p.queue_packets, 834);
        assert_eq!(PathSpec::new(100_000_000, 10.0, 0.0, 0.0).queue_packets, 100);
        let c = PathSpec::new(50_000_000, 20.0, 1.0, 0.0).emulator_config("x");
        assert_eq!(c.a_to_b.delay, Duration::from_millis(10));
        assert_eq!(c.a_to_b.loss, Loss::Bernoulli { p: 0.01 });
        assert_eq!(c.b_to_a.loss, Loss::None);
        assert_eq!(c.realtime, Some(REALTIME_PRIORITY));
        c.validate().unwrap();
    }

    #[test]
    fn each_direction_gets_its_own_loss() {
        let p = PathSpec::new(200_000_000, 100.0, 1.0, 0.1);
        let c = p.emulator_config("x");
        assert_eq!(c.a_to_b.loss, Loss::Bernoulli { p: 0.01 });
        assert_eq!(c.b_to_a.loss, Loss::Bernoulli { p: 0.001 });
        assert_eq!((c.a_to_b.rate_bps, c.b_to_a.rate_bps), (200_000_000, 200_000_000));
        assert_eq!(c.b_to_a.delay, Duration::from_millis(50));
        c.validate().unwrap();
        assert_eq!(p.label(), "200 Mb/s, RTT 100 ms, loss 1% / 0.1% (A to B / B to A), queue 1667 packets");
        assert_eq!(p.slug(), "200mbit-rtt100-loss1-rev0.1");
        assert_eq!(PathSpec::new(1_500_000, 10.0, 0.0, 0.0).slug(), "1.5mbit-rtt10-loss0-rev0");
    }

    #[test]
    fn jitter_reaches_both_directions_and_names_the_path() {
        let mut p = PathSpec::new(100_000_000, 20.0, 0.0, 0.0);
        assert!(p.emulator_config("x").a_to_b.jitter.is_zero());
        p.jitter_ms = 1.5;
        let c = p.emulator_config("x");
        assert_eq!(
            (c.a_to_b.jitter, c.b_to_a.jitter),
            (Duration::from_micros(1500), Duration::from_micros(1500))
        );
        c.validate().unwrap();
        assert_eq!(p.slug(), "100mbit-rtt20-jit1.5-loss0-rev0");
        assert!(p.label().starts_with("100 Mb/s, RTT 20 ms, jitter +-1.5 ms, loss 0%"));
    }

    #[test]
    fn reverse_loss_is_same_or_a_percentage() {
        assert_eq!(ReverseLoss::parse("same"), Ok(ReverseLoss::Same));
        assert_eq!(ReverseLoss::parse("SAME"), Ok(ReverseLoss::Same));
        assert_eq!(ReverseLoss::parse("0"), Ok(ReverseLoss::Percent(0.0)));
        assert_eq!(ReverseLoss::parse("0.5%"), Ok(ReverseLoss::Percent(0.5)));
        assert!(ReverseLoss::parse("101").is_err());
        assert!(ReverseLoss::parse("some").is_err());
        assert_eq!(ReverseLoss::Same.of(1.0), 1.0);
        assert_eq!(ReverseLoss::Percent(0.0).of(1.0), 0.0);
    }
}
