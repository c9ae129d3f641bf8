//! Protocol policy: what a connection does beyond UDT4's rules, as configuration.
//!
//! A [`Policy`] has two halves. The sending half decides what this end's sender does with what
//! the peer's receiver tells it (repeated ACKs, the head probe). The receiving half is what this
//! end's sender needs the peer's receiver to report (progress ACKs, which arrival rate, how
//! often to acknowledge): the connection offers it to the peer at start
//! ([`Offer`], connection/policy_exchange.rs), and this end's receiver in turn does what the
//! peer's offer asks, UDT4's behaviour until then. So a receiver's reports always serve the
//! controller that reads them, whichever controller the receiving end runs.
//!
//! The application sets a policy in [`Config::policy`](crate::connection::Config::policy); left
//! unset, it is what the congestion controller declares it needs
//! ([`CcFactory::policy`](crate::cc::CcFactory::policy)). A controller only reads what the
//! connection measured: it never switches protocol behaviour at run time.
//!
//! Invariant: between two ends whose policies are [`Policy::UDT4`], the wire carries exactly
//! what UDT4 4.11 sends (no offer is made: there is nothing to ask).

use std::time::Duration;

/// What a connection does beyond UDT4's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Policy {
    /// Sender: resend the oldest unacknowledged packet when its last retransmission was not
    /// acknowledged in time (the head probe), instead of waiting for the receiver to report it
    /// again (twice the RTT and more, with the window filling meanwhile). For links with errors,
    /// where a lost retransmission is a common event rather than a sign of heavy congestion.
    pub head_probe: bool,
    /// Sender: a NAK for a packet retransmitted less than one RTT ago was written before that
    /// retransmission could arrive, so it does not send the packet again. With it, a receiver
    /// may repeat its loss reports without backing off ([`Policy::steady_loss_reports`]).
    pub one_resend_per_rtt: bool,
    /// Sender: a full ACK that repeats the last one's number still brings news: the receiver's
    /// RTT and rates are adopted and the controller's `on_ack` runs. Such ACKs are the peer's
    /// progress ACKs ([`Policy::progress_acks`]); UDT4's sender ignores them.
    pub learn_from_repeated_acks: bool,
    /// Receiving half: send a full ACK every SYN while data arrives behind a hole that holds the ACK
    /// point, its number repeated, so a rate-based sender keeps learning on a long lossy path.
    pub progress_acks: bool,
    /// Receiving half: report as the arrival rate of full ACKs the packets that arrived since the
    /// previous report over the time since then, instead of UDT4's median-filtered rate of the
    /// last 16 arrivals (which drops gaps over 8 times the median, so a flow sharing a link
    /// reads the link's rate). The field and its unit stay UDT4's.
    pub counted_arrival_rate: bool,
    /// Receiving half: also send a full ACK every this many data packets (thesis §5.2
    /// `setACKInterval`; the TCP family's delayed ACKs), not only on the ACK timer.
    pub ack_interval: Option<u32>,
    /// Receiving half: the ACK timer's period, clamped to [1 ms, SYN] (thesis §5.2 `setACKTimer`);
    /// `None` is SYN (10 ms).
    pub ack_period: Option<Duration>,
    /// Receiving half: measure each data packet's one-way queueing delay from its header
    /// timestamp ([`crate::queue_delay`]) and report the smallest and largest since the last
    /// report in full ACKs that carry rates (32-byte bodies; docs/deviations.md W12).
    pub queue_delay_reports: bool,
    /// Receiving half: report an unrepaired loss again every re-report interval, instead of
    /// after `k` intervals the `k`-th time (thesis §2.2.3): on a link with errors a lost NAK or
    /// retransmission is then repaired one interval later. Asked for by a sender with
    /// [`Policy::one_resend_per_rtt`], which keeps repeats from duplicating retransmissions.
    pub steady_loss_reports: bool,
}

impl Policy {
    /// UDT4 4.11's behaviour: no head probe, repeated ACKs ignored, no progress ACKs, the
    /// median-filtered arrival rate, ACKs on the SYN timer only.
    pub const UDT4: Policy = Policy {
        head_probe: false,
        one_resend_per_rtt: false,
        learn_from_repeated_acks: false,
        progress_acks: false,
        counted_arrival_rate: false,
        ack_interval: None,
        ack_period: None,
        queue_delay_reports: false,
        steady_loss_reports: false,
    };

    /// What a rate-based controller that sees link errors needs: progress ACKs sent and learnt
    /// from, the counted arrival rate, and steady loss reports with one resend per round trip
    /// (the default controller's declaration).
    pub const PROGRESS_REPORTS: Policy = Policy {
        learn_from_repeated_acks: true,
        progress_acks: true,
        counted_arrival_rate: true,
        one_resend_per_rtt: true,
        steady_loss_reports: true,
        ..Policy::UDT4
    };

    /// This policy with the head probe set to `on`.
    pub const fn with_head_probe(self, on: bool) -> Policy {
        Policy { head_probe: on, ..self }
    }

    /// This policy with progress ACKs sent and learnt from (`on`) or neither.
    pub const fn with_progress_acks(self, on: bool) -> Policy {
        Policy { progress_acks: on, learn_from_repeated_acks: on, ..self }
    }

    /// This policy with steady loss reports asked for and one resend per round trip (`on`), or
    /// neither.
    pub const fn with_steady_loss_reports(self, on: bool) -> Policy {
        Policy { steady_loss_reports: on, one_resend_per_rtt: on, ..self }
    }

    /// This policy with queueing-delay reports asked for (`on`) or not.
    pub const fn with_queue_delay_reports(self, on: bool) -> Policy {
        Policy { queue_delay_reports: on, ..self }
    }

    /// This policy with the counted arrival rate reported (`on`) or UDT4's median.
    pub const fn with_counted_arrival_rate(self, on: bool) -> Policy {
        Policy { counted_arrival_rate: on, ..self }
    }

    /// This policy acknowledging every `n` data packets too (`None`: on the timer only).
    pub const fn with_ack_interval(self, n: Option<u32>) -> Policy {
        Policy { ack_interval: n, ..self }
    }

    /// This policy with the ACK timer's period `period` (`None`: SYN).
    pub const fn with_ack_period(self, period: Option<Duration>) -> Policy {
        Policy { ack_period: period, ..self }
    }

    /// Whether the receiver acknowledges every few data packets, not only on the timer.
    pub fn acknowledges_by_count(&self) -> bool {
        self.ack_interval.is_some_and(|n| n > 0)
    }

    /// Whether the receiving half asks anything of the peer's receiver beyond UDT4's behaviour.
    pub fn asks_beyond_udt4(&self) -> bool {
        Policy::UDT4.receiving_as(self) != Policy::UDT4
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::UDT4
    }
}

/// The user-defined control sub-type (control type 0x7FFF) of a policy offer. UDT4 hands such
/// packets to its congestion control, whose default ignores them; ours handles this sub-type in
/// the connection and never passes it to the controller.
pub const POLICY_SUBTYPE: u16 = 0x504c;

/// Version of the offer's layout, in bits 8..16 of its info word.
const OFFER_VERSION: u32 = 1;
const PROGRESS_ACKS: u32 = 1 << 0;
const COUNTED_RATE: u32 = 1 << 1;
/// The sender of the offer has heard the receiver's: no answer is needed.
const HEARD: u32 = 1 << 2;
const QUEUE_DELAY: u32 = 1 << 3;
const STEADY_LOSS_REPORTS: u32 = 1 << 4;
/// Largest ACK interval an offer may ask for; more is the timer's business.
const MAX_ACK_INTERVAL: u32 = 1 << 16;

/// What one end asks of the other's receiver, as sent at connection start: the receiving half
/// of its policy, which its sender's controller needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The receiving half asked for (the sending half's fields are left at UDT4's).
    pub wants: Policy,
    /// Whether the sender of this offer has already heard the other end's.
    pub heard: bool,
}

impl Offer {
    /// The info word and body of the offer's control packet.
    pub fn encode(&self) -> (u32, Vec<u8>) {
        let w = &self.wants;
        let mut info = OFFER_VERSION << 8;
        if w.progress_acks {
            info |= PROGRESS_ACKS;
        }
        if w.counted_arrival_rate {
            info |= COUNTED_RATE;
        }
        if self.heard {
            info |= HEARD;
        }
        if w.queue_delay_reports {
            info |= QUEUE_DELAY;
        }
        if w.steady_loss_reports {
            info |= STEADY_LOSS_REPORTS;
        }
        let interval = w.ack_interval.unwrap_or(0).min(MAX_ACK_INTERVAL);
        let period_us = w.ack_period.map_or(0, |p| p.as_micros().clamp(1, u128::from(u32::MAX)) as u32);
        let mut body = Vec::with_capacity(8);
        body.extend_from_slice(&interval.to_be_bytes());
        body.extend_from_slice(&period_us.to_be_bytes());
        (info, body)
    }

    /// Parse an offer; `None` for another version or a short body (the packet is then
    /// ignored). Unknown flag bits are ignored; the ACK interval is capped.
    pub fn decode(info: u32, body: &[u8]) -> Option<Offer> {
        if (info >> 8) & 0xff != OFFER_VERSION {
            return None;
        }
        let interval = u32::from_be_bytes(body.get(0..4)?.try_into().ok()?);
        let period_us = u32::from_be_bytes(body.get(4..8)?.try_into().ok()?);
        let wants = Policy {
            progress_acks: info & PROGRESS_ACKS != 0,
            counted_arrival_rate: info & COUNTED_RATE != 0,
            queue_delay_reports: info & QUEUE_DELAY != 0,
            steady_loss_reports: info & STEADY_LOSS_REPORTS != 0,
            ack_interval: (interval > 0).then_some(interval.min(MAX_ACK_INTERVAL)),
            ack_period: (period_us > 0).then(|| Duration::from_micros(u64::from(period_us))),
            ..Policy::UDT4
        };
        Some(Offer { wants, heard: info & HEARD != 0 })
    }
}

impl Policy {
    /// This policy with its receiving half replaced by what the peer's offer asks for.
    pub fn receiving_as(self, asked: &Policy) -> Policy {
        Policy {
            progress_acks: asked.progress_acks,
            counted_arrival_rate: asked.counted_arrival_rate,
            ack_interval: asked.ack_interval,
            ack_period: asked.ack_period,
            queue_delay_reports: asked.queue_delay_reports,
            steady_loss_reports: asked.steady_loss_reports,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_round_trip() {
        let policies = [
            Policy::UDT4,
            Policy::PROGRESS_REPORTS,
            Policy::PROGRESS_REPORTS.with_queue_delay_reports(true),
            Policy::UDT4.with_steady_loss_reports(true),
            Policy::UDT4.with_ack_interval(Some(2)).with_ack_period(Some(Duration::from_millis(3))),
        ];
        for wants in policies {
            for heard in [false, true] {
                let offer = Offer { wants: Policy::UDT4.receiving_as(&wants), heard };
                let (info, body) = offer.encode();
                assert_eq!(Offer::decode(info, &body), Some(offer));
            }
        }
    }

    #[test]
    fn hostile_offers_are_ignored_or_bounded() {
        assert_eq!(Offer::decode(0, &[0; 8]), None, "version 0");
        assert_eq!(Offer::decode(2 << 8, &[0; 8]), None, "a later version");
        assert_eq!(Offer::decode(1 << 8, &[0; 7]), None, "short body");
        let huge = Offer::decode(1 << 8 | 0xff, &[0xff; 8]).unwrap();
        assert_eq!(huge.wants.ack_interval, Some(MAX_ACK_INTERVAL));
        assert!(!huge.wants.head_probe && !huge.wants.learn_from_repeated_acks, "sending half untouched");
    }

    #[test]
    fn the_receiving_half_follows_the_offer_and_the_sending_half_stays() {
        let mine = Policy::UDT4.with_head_probe(true);
        let now = mine.receiving_as(&Policy::PROGRESS_REPORTS);
        assert!(now.head_probe && !now.learn_from_repeated_acks);
        assert!(now.progress_acks && now.counted_arrival_rate);
    }
}
