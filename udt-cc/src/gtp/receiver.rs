//! The receiving half of a GTP controller: measures its flow once per control interval, asks the
//! group manager for the flow's allocation and produces the allocation message for the sender.
//!
//! Measurement: the interval starts at a data packet and closes at the first data packet at least
//! one interval later; the packets counted are those arriving in `[start, close)`, so packets
//! `p` apart give exactly `MSS * 8 / p` bits/s. The loss of the interval is the growth of the
//! connection's receiver-loss counter (`rcv_loss`, packets detected missing). The interval is
//! the configured one or, by default, `max(SYN, RTT)` capped at one second: one round trip is the
//! soonest an allocation can show its effect, and the SYN floor keeps the message rate bounded
//! on short paths. By default the flow's first interval is one SYN, so that a new sender leaves
//! its conservative initial rate quickly (its first measurement is not judged against any
//! allocation, and the receiver's RTT is still UDT's 100 ms default then).
//!
//! Invariants: a flow registers with the manager at its first data packet (or first request)
//! and only then; every allocation message has a number one higher than the previous one.

use std::sync::Mutex;
use std::time::Duration;

use super::lock;
use super::manager::{FlowId, GroupManager, Report};
use super::message::GtpMessage;
use crate::CcContext;
use udt_proto::time::Instant;

/// The longest automatic control interval.
const MAX_AUTO_INTERVAL: Duration = Duration::from_secs(1);

/// Receiver-side state of one connection.
#[derive(Debug, Default)]
pub(super) struct ReceiverSide {
    /// The flow's id in the manager, once registered.
    pub(super) flow: Option<FlowId>,
    /// Start of the current interval; `None` before the first data packet.
    interval_start: Option<Instant>,
    packets: u64,
    loss_base: u64,
    number: u32,
}

/// The control interval for `ctx` (`configured`, or `max(SYN, RTT)` up to one second).
pub(super) fn control_interval(configured: Option<Duration>, ctx: &CcContext<'_>) -> Duration {
    configured.unwrap_or_else(|| ctx.rtt.max(ctx.syn_interval).min(MAX_AUTO_INTERVAL))
}

/// Bits per second of `packets` MSS-sized packets over `elapsed` (at least 1 ns).
fn rate(packets: u64, mss: u32, elapsed: Duration) -> u64 {
    let bits = u128::from(packets) * u128::from(mss) * 8 * 1_000_000_000;
    let nanos = elapsed.as_nanos().max(1);
    u64::try_from(bits / nanos).unwrap_or(u64::MAX)
}

impl ReceiverSide {
    /// The flow's id, registering it first if needed.
    pub(super) fn flow(&mut self, manager: &Mutex<GroupManager>, now: Instant) -> FlowId {
        *self.flow.get_or_insert_with(|| lock(manager).register(now))
    }

    /// A data packet arrived: the allocation message to send when it closes an interval.
    pub(super) fn on_packet(
        &mut self,
        ctx: &CcContext<'_>,
        manager: &Mutex<GroupManager>,
        interval: Option<Duration>,
    ) -> Option<GtpMessage> {
        let now = ctx.now;
        let lost_total = ctx.stats.total.rcv_loss;
        let flow = self.flow(manager, now);
        let Some(start) = self.interval_start else {
            self.restart(now, lost_total);
            return None;
        };
        let interval = match interval {
            // The first allocation is judged against nothing: one SYN of measurement will do, and
            // the RTT is still the 100 ms default before the first ACK2.
            None if self.number == 0 => ctx.syn_interval,
            configured => control_interval(configured, ctx),
        };
        let elapsed = now.saturating_since(start);
        if elapsed < interval {
            self.packets += 1;
            return None;
        }
        let lost = lost_total.saturating_sub(self.loss_base);
        let report = Report {
            now,
            arrival_bps: rate(self.packets, ctx.mss, elapsed),
            loss_fraction: lost as f64 / (self.packets + lost).max(1) as f64,
            horizon: interval + ctx.rtt,
        };
        let bits_per_sec = lock(manager).report(flow, &report);
        self.restart(now, lost_total);
        self.number = self.number.wrapping_add(1);
        Some(GtpMessage::Allocation { number: self.number, bits_per_sec })
    }

    /// Start an interval at `now` with the packet that arrived then.
    fn restart(&mut self, now: Instant, lost_total: u64) {
        self.interval_start = Some(now);
        self.packets = 1;
        self.loss_base = lost_total;
    }

    /// The connection closed: leave the group.
    pub(super) fn leave(&mut self, manager: &Mutex<GroupManager>) {
        if let Some(id) = self.flow.take() {
            lock(manager).remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_count_whole_packets() {
        // 1000 packets of 1500 bytes in 12 ms: 1 Gb/s.
        assert_eq!(rate(1000, 1500, Duration::from_millis(12)), 1_000_000_000);
        assert_eq!(rate(1, 1500, Duration::ZERO), 12_000_000_000_000);
    }
}
