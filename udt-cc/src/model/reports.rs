//! The receiver's reports as the model's samples: the RTT report (trusted once plausible) and
//! the standing-queue report it carries, the arrival-rate report, and the delivery rate the
//! sender measures from its cumulative ACK; the round's delivery rate from them. The state
//! machine that reads them is in `mod.rs`.
//!
//! Invariants: a sample is taken only from a report that can have measured it (an RTT report
//! after it passed the plausibility floor, a rate report after the warm-up packets); nothing
//! here changes the state.

use std::time::Duration;

use super::delivery::RateMean;
use super::{ModelCc, State, REPORT_WARMUP_PACKETS, UDT4_MADE_UP_RATE};
use crate::AckReport;
use udt_proto::seq::SeqNo;
use udt_proto::time::Instant;

impl ModelCc {
    /// The ACK's RTT report, once plausible ([`Self::trust_rtt`]), and its queue report. An
    /// acknowledged packet's own round trip overstates the RTT by at most one ACK period and
    /// the queue the first packets met on an idle path (the 1/8).
    pub(super) fn handle_rtt(&mut self, now: Instant, syn: Duration, report: &AckReport) {
        let trusted = self.first_rtt.trust(report.rtt, syn);
        if trusted {
            self.last_rtt = Some(report.rtt);
            self.min_rtt.update(now, report.rtt);
        }
        // The standing queue: the receiver's one-way measure when it sends one (ours, asked for
        // by the policy; it needs no RTT, so it counts before the RTT reports are plausible),
        // else the smoothed RTT over its minimum (a UDT4 receiver's reports, which lag the queue
        // by the 1/8 smoothing).
        self.queue_reports |= report.queue.is_some();
        let standing = match (report.queue, self.min_rtt.get()) {
            (Some(q), _) => Some(q.min),
            (None, Some(min)) if trusted && !self.queue_reports => Some(report.rtt.saturating_sub(min)),
            _ => None,
        };
        if let Some(q) = standing {
            self.last_queue = Some(q);
            self.cycle_queue = self.cycle_queue.max(q.as_secs_f64());
            self.queue.handle_sample(now, self.cycle, q, self.queue_bucket(syn));
        }
        if trusted && self.state == State::ProbeRtt {
            self.probe_rtt_min = Some(self.probe_rtt_min.map_or(report.rtt, |m| m.min(report.rtt)));
        }
    }

    /// The round's delivery rate: the mean of the arrival rates its ACKs reported, each
    /// weighted by the time since the previous report (the interval it counts). One report
    /// covers one or two ACK periods only; the round is what the flow got.
    pub(super) fn handle_rate(&mut self, now: Instant, report: &AckReport) {
        if report.recv_rate == 0 {
            return;
        }
        if self.acked_packets < REPORT_WARMUP_PACKETS {
            self.median_reports |= report.recv_rate == UDT4_MADE_UP_RATE;
            return;
        }
        let weight = self.last_rate_at.map_or(0.0, |t| (now - t).as_secs_f64());
        self.last_rate_at = Some(now);
        let weight = if weight > 0.0 { weight } else { 1e-3 };
        self.round_reported.add(f64::from(report.recv_rate), weight);
        if self.state == State::Startup && !self.median_reports {
            self.startup_arrived += f64::from(report.recv_rate) * weight;
        }
        self.update_startup_bw();
    }

    /// The ACK point advanced to `ack`: the delivery rate measured from it ([`delivery`]).
    pub(super) fn handle_delivery(&mut self, now: Instant, ack: SeqNo) {
        if ack.is_after(self.last_ack) && self.acked_packets < REPORT_WARMUP_PACKETS {
            self.acked_packets += ack.diff(self.last_ack) as u64;
        }
        if let Some((rate, span)) = self.delivery.on_advance(ack, now, &self.sent_at) {
            self.round_acked.add(rate, span);
            self.update_startup_bw();
        }
    }

    fn update_startup_bw(&mut self) {
        if self.state == State::Startup {
            // Startup paces on the running round (it must not lag a doubling rate); elsewhere
            // a round counts once complete.
            self.bw.update(self.cycle, self.bw_sample());
        }
    }

    /// The round's delivery rate ([`delivery`]): the receiver's reports, which count
    /// arrivals behind holes too, once they mean something; the sender's own measurement
    /// before (the first [`REPORT_WARMUP_PACKETS`]), and throughout when the reports are UDT4's
    /// median estimator (`median_reports`), which reads bursts: a queue or a driver releasing
    /// packets together made it report 5 to 20 times an emulated link's rate.
    pub(super) fn round_bw(&self) -> f64 {
        self.round_rates().mean()
    }

    pub(super) fn round_samples(&self) -> u32 {
        self.round_rates().samples()
    }

    fn round_rates(&self) -> &RateMean {
        if self.acked_packets < REPORT_WARMUP_PACKETS || self.median_reports {
            &self.round_acked
        } else {
            &self.round_reported
        }
    }
}
