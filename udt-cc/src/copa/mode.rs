//! Copa's mode switch (paper §2.2): a buffer-filling competitor is present when the standing
//! queue has not been nearly empty for [`COMPETITOR_ROUNDS`] rounds, and gone when it has been
//! nearly empty for a whole round (a buffer filler's own drain, CUBIC's after a loss, empties
//! the queue for a moment without leaving; Copa flows alone leave it empty for rounds).
//!
//! "Nearly empty": the standing queueing delay is at most [`NEARLY_EMPTY`] of the largest
//! queueing delay seen over the last [`PEAK_ROUNDS`] rounds, or at most what the paper's `1/δ`
//! packets take on the link. Copa flows among themselves oscillate around a queue of a few
//! packets and empty it every few rounds; a flow that fills the buffer until it drops keeps it
//! from emptying. A queue is counted in whole packets: on a slow link one packet is a long time
//! (12 ms at 1 Mb/s), and the trough of a Copa flow's own cycle, a packet or two, can stay above
//! a tenth of a peak of a few packets; a queue no longer than the `1/δ` packets Copa keeps
//! itself is no buffer filler's.
//!
//! Invariants: samples that are not finite or negative are ignored; the peak history holds
//! only samples from the last [`PEAK_ROUNDS`] rounds; the mode starts default.

use std::collections::VecDeque;
use std::time::Duration;

use super::{COMPETITOR_ROUNDS, NEARLY_EMPTY, PEAK_ROUNDS};
use udt_proto::time::Instant;

/// The mode switch (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct ModeDetector {
    /// (time, largest queueing delay) of recent reports, oldest first.
    peaks: VecDeque<(Instant, f64)>,
    /// When the queue was last nearly empty (the first sample counts as such).
    last_empty: Option<Instant>,
    /// When the current run of nearly empty samples began.
    empty_since: Option<Instant>,
    competitive: bool,
    /// The queue has not been nearly empty for a whole round.
    standing: bool,
}

impl ModeDetector {
    /// A report at `now`: the standing queueing delay `standing` and the largest `peak`
    /// (seconds); a round lasts `round`; a standing queue of at most `own_share` seconds (the
    /// paper's `1/δ` packets on the link) is nearly empty whatever the peak.
    pub fn handle_sample(&mut self, now: Instant, standing: f64, peak: f64, round: Duration, own_share: f64) {
        if !standing.is_finite() || !peak.is_finite() || standing < 0.0 || peak < 0.0 {
            return;
        }
        let keep = round * PEAK_ROUNDS;
        while self.peaks.front().is_some_and(|&(t, _)| now.saturating_since(t) > keep) {
            self.peaks.pop_front();
        }
        self.peaks.push_back((now, peak.max(standing)));
        let recent_peak = self.peaks.iter().map(|&(_, p)| p).fold(0.0, f64::max);
        let nearly_empty = standing <= (NEARLY_EMPTY * recent_peak).max(own_share);
        if nearly_empty || self.last_empty.is_none() {
            self.last_empty = Some(now);
            self.empty_since.get_or_insert(now);
        } else {
            self.empty_since = None;
        }
        let since_empty = self.last_empty.map_or(Duration::ZERO, |t| now.saturating_since(t));
        self.standing = since_empty >= round;
        if since_empty > round * COMPETITOR_ROUNDS {
            self.competitive = true;
        } else if self.empty_since.is_some_and(|t| now.saturating_since(t) >= round) {
            self.competitive = false;
        }
    }

    /// Whether the queue has not been nearly empty for a whole round: a loss then is the
    /// buffer's overflow. A delay that lifts every packet for less than a round (a stall of a
    /// host or a link on the path) is no full buffer, and the link's random losses within it
    /// are the link's.
    pub fn standing(&self) -> bool {
        self.standing
    }

    /// Whether a buffer-filling competitor is present.
    pub fn competitive(&self) -> bool {
        self.competitive
    }
}
