//! What a FOBS session counts beyond the shared [`crate::Counters`]: the acknowledgement
//! traffic of each scheme, for the paper's comparison of whole-chunk maps over UDP with
//! segmented acknowledgements over TCP (Kannan et al. 2003 §5).
//!
//! Invariant: counts only grow; a field that belongs to the other end stays 0.

use std::time::Duration;

use crate::session::Counters;

/// A FOBS session's own counts. Fields marked (sender) or (receiver) are kept by that end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FobsStats {
    /// End-of-segment messages sent (sender) or received (receiver).
    pub end_of_segments: u64,
    /// DONE messages sent (sender) or received (receiver).
    pub dones: u64,
    /// Segment bit acknowledgements received (sender) or sent (receiver).
    pub segment_bits: u64,
    /// Segment ACKs (all of a segment arrived) received (sender) or sent (receiver).
    pub segment_acks: u64,
    /// NACKs received (sender) or sent (receiver).
    pub nacks: u64,
    /// Chunk-map datagrams received (sender) or sent (receiver).
    pub map_parts: u64,
    /// Whole chunk maps the receiver sent (each one or more datagrams) (receiver).
    pub maps: u64,
    /// Bytes of chunk-map datagrams sent (receiver).
    pub map_bytes: u64,
    /// Control bytes this end wrote, on both TCP connections.
    pub control_bytes: u64,
    /// Acknowledgements or data for a chunk already finished, ignored.
    pub stale: u64,
    /// Passes over chunks: the first pass over each chunk and every cycle over its
    /// unacknowledged packets (sender).
    pub passes: u64,
    /// Spans of reports the rate rule judged (sender).
    pub rate_samples: u64,
    /// The pacing rate now, bits per second (sender).
    pub rate_bps: u64,
    /// The smoothed round-trip time now (sender).
    pub srtt: Duration,
    /// Digest messages sent (sender) or received (receiver): 1 when the end-to-end digest
    /// went through ([`crate::digest`]).
    pub digests: u64,
    /// 1 when every byte arrived but the transfer ended without the sender's digest: the sender
    /// closed channel 1 or aborted, its digest was malformed (also counted in
    /// [`Counters::malformed`]), or the wait passed (receiver). The transfer is Done all the same.
    pub digests_missing: u64,
    /// Of [`FobsStats::digests_missing`], the ends where the wait ([`crate::digest::wait`])
    /// passed (receiver).
    pub digest_timeouts: u64,
}

/// The paper's "loss percentage" (§5): datagrams sent beyond one per packet, as a percentage of
/// the packets; it exceeds 100 when packets go several times (§5.2.2 reports over 1000%).
pub fn loss_percent(sender: &Counters) -> f64 {
    let originals = sender.datagrams_sent.saturating_sub(sender.retransmitted);
    if originals == 0 {
        return 0.0;
    }
    sender.retransmitted as f64 * 100.0 / originals as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_percent_counts_retransmissions_over_originals() {
        let c = Counters { datagrams_sent: 150, retransmitted: 50, ..Counters::default() };
        assert_eq!(loss_percent(&c), 50.0);
        let c = Counters { datagrams_sent: 1100, retransmitted: 1000, ..Counters::default() };
        assert_eq!(loss_percent(&c), 1000.0);
        assert_eq!(loss_percent(&Counters::default()), 0.0);
    }
}
