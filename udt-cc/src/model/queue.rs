//! The queue signal that tells congestion from link errors: a loss is the queue's when it comes
//! with a standing queue, the link's when the queue is empty.
//!
//! A queue that overflows is full when it drops: whoever fills it (our flows, a competitor
//! that fills buffers), the losses come while the queueing delay is at the buffer's depth. A
//! faulty link drops at any queue, and under a paced flow the queue is empty. So the gauge
//! keeps two things, both in seconds of queueing delay:
//! - `peak`: the deepest standing queue seen over the last probe cycles (the buffer's depth as
//!   far as the flow has filled it: Startup's overshoot and every probe measure it again);
//! - `recent`: the deepest standing queue of the last round or two (a loss is reported about
//!   half a round trip after the drop, and the queue a competitor keeps changes over rounds).
//!
//! A queue *stands* when `recent` reaches `standing` (a fraction) of `peak` and is above the
//! floor, a fraction of the propagation RTT below which a queue cannot be told from the path's
//! jitter and the flow's own pacing. A *standing* sample is the minimum queueing delay over an
//! interval (the receiver's per-ACK-period minimum of one-way delay, or the smoothed RTT less
//! the minimum): a transient burst does not stand.
//!
//! After a decrease the gauge remembers the depth it answered: a queue that has fallen by more
//! than the floor since (or since the last check) is draining (the decrease was enough) and is
//! not answered, so a buffer that takes many round trips to empty costs one decrease, not one
//! per round trip; one that holds or fills again is.
//!
//! Invariants: samples are finite and non-negative (others are ignored); `recent` forgets a
//! sample after two buckets; `peak` after its window of probe cycles.

use std::time::Duration;

use super::filters::MaxFilter;
use udt_proto::time::Instant;

/// Standing-queue samples, their recent and their peak maximum.
#[derive(Clone, Debug)]
pub struct QueueGauge {
    peak: MaxFilter,
    /// Two buckets of `recent` maximum: (start, max) of the current and the previous one.
    current: (Instant, f64),
    previous: f64,
    /// Samples before this are ignored: they measure a queue from before the last decrease.
    quiet_until: Instant,
    /// The recent depth when the flow last decreased, or at the last draining check after it,
    /// seconds.
    at_decrease: f64,
    /// The recent depth the last decrease answered, seconds (0 once forgotten).
    answered: f64,
    /// The bucket (its start) the last draining check judged, and its verdict: a bucket's
    /// maximum only changes its meaning when the next bucket begins.
    checked: Option<(Instant, bool)>,
}

impl QueueGauge {
    /// A gauge whose peak spans `cycles` probe cycles.
    pub fn new(cycles: u32) -> Self {
        QueueGauge {
            peak: MaxFilter::new(cycles),
            current: (Instant::ZERO, 0.0),
            previous: 0.0,
            quiet_until: Instant::ZERO,
            at_decrease: 0.0,
            answered: 0.0,
            checked: None,
        }
    }

    /// A standing-queue sample `queue` at `now`, in probe cycle `cycle`; a bucket of the recent
    /// maximum spans `bucket` (a round).
    pub fn handle_sample(&mut self, now: Instant, cycle: u64, queue: Duration, bucket: Duration) {
        let q = queue.as_secs_f64();
        if !q.is_finite() || now < self.quiet_until {
            return;
        }
        self.roll(now, bucket);
        self.current.1 = self.current.1.max(q);
        self.peak.update(cycle, q);
    }

    /// Move to probe cycle `cycle` (the peak forgets cycles that fall out of its window).
    pub fn advance(&mut self, cycle: u64) {
        self.peak.advance(cycle);
    }

    fn roll(&mut self, now: Instant, bucket: Duration) {
        let (start, max) = self.current;
        if now >= start + bucket {
            // A gap of more than one bucket leaves nothing recent but the current sample.
            self.previous = if now >= start + bucket * 2 { 0.0 } else { max };
            self.current = (now, 0.0);
        }
    }

    /// The flow decreased its rate at `now`: the recent queue is forgotten, and samples until
    /// `until` (when the first report on packets sent after the decrease can arrive) ignored,
    /// so one queue is answered once, as TCP answers one window's losses once.
    pub fn restart(&mut self, now: Instant, until: Instant) {
        // A second restart for the same decrease finds nothing recent: the depth stays.
        if self.recent() > 0.0 {
            self.at_decrease = self.recent();
            self.answered = self.recent();
        }
        self.current = (now, 0.0);
        self.previous = 0.0;
        self.quiet_until = until;
        self.checked = None;
    }

    /// The deepest standing queue of the last one to two buckets, seconds.
    pub fn recent(&self) -> f64 {
        self.current.1.max(self.previous)
    }

    /// The deepest standing queue over the peak's window, seconds.
    pub fn peak(&self) -> f64 {
        self.peak.get()
    }

    /// Whether the queue stands: its recent depth is at least `standing` of the peak and above
    /// `floor`.
    pub fn stands(&self, standing: f64, floor: Duration) -> bool {
        let recent = self.recent();
        recent > floor.as_secs_f64() && recent >= standing * self.peak()
    }

    /// The queue no longer stands (by samples taken after the last decrease, at `now`): that
    /// decrease's drain is over.
    pub fn forget_decrease(&mut self, now: Instant) {
        if now >= self.quiet_until {
            self.at_decrease = 0.0;
            self.answered = 0.0;
        }
    }

    /// Whether the queue the last decrease answered is back at its depth (within `floor`) in
    /// the newest bucket, though that decrease's queue was not forgotten since: the flow sent
    /// less and the queue refilled, so another flow fills it. A flow's own queue that a decrease
    /// left standing at a smaller depth (the decrease was not quite enough) is not.
    pub fn held_since_decrease(&self, floor: Duration) -> bool {
        self.answered > 0.0 && self.newest() + floor.as_secs_f64() >= self.answered
    }

    /// The newest bucket's depth (the recent maximum keeps an older bucket's for a while).
    fn newest(&self) -> f64 {
        if self.current.1 > 0.0 {
            self.current.1
        } else {
            self.previous
        }
    }

    /// Whether the queue drains: its depth in the newest bucket is more than `floor` below the
    /// depth at the last decrease or the last check after it. The decrease was enough (the
    /// flows into it send less than the link takes), however long the queue takes to empty:
    /// not congestion to answer again. Each check moves the reference to the depth now, so a
    /// queue that stops falling (it holds, or a competitor fills it again) is answered.
    ///
    /// Checks within one bucket keep its first verdict: the bucket's maximum is a round's, and
    /// a queue falls by the floor over rounds, not between two checks of the same one.
    pub fn check_draining(&mut self, floor: Duration) -> bool {
        if let Some((_, verdict)) = self.checked.filter(|&(bucket, _)| bucket == self.current.0) {
            return verdict;
        }
        let newest = self.newest();
        let draining = newest + floor.as_secs_f64() < self.at_decrease;
        if draining {
            self.at_decrease = newest;
        }
        self.checked = Some((self.current.0, draining));
        draining
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn at(ms: u64) -> Instant {
        Instant::ZERO + MS * ms as u32
    }

    #[test]
    fn an_empty_queue_never_stands() {
        let mut g = QueueGauge::new(2);
        for t in 0..100 {
            g.handle_sample(at(t * 10), 0, Duration::ZERO, 20 * MS);
        }
        assert!(!g.stands(0.5, MS));
        assert_eq!(g.peak(), 0.0);
    }

    #[test]
    fn a_full_queue_stands_and_a_drained_one_does_not() {
        let mut g = QueueGauge::new(2);
        g.handle_sample(at(0), 0, 40 * MS, 20 * MS);
        assert!(g.stands(0.5, MS));
        // Drained to a tenth of its peak: after two buckets the recent maximum is the drained one.
        for t in 1..=5 {
            g.handle_sample(at(t * 10), 0, 4 * MS, 20 * MS);
        }
        assert!((g.recent() - 0.004).abs() < 1e-9, "{}", g.recent());
        assert!(!g.stands(0.5, MS));
        // Filled again by a competitor: it stands.
        g.handle_sample(at(60), 0, 30 * MS, 20 * MS);
        assert!(g.stands(0.5, MS));
    }

    #[test]
    fn a_queue_under_the_floor_never_stands() {
        let mut g = QueueGauge::new(2);
        for t in 0..10 {
            g.handle_sample(at(t * 10), 0, Duration::from_micros(200), 20 * MS);
        }
        assert!(!g.stands(0.5, MS), "jitter-sized queue");
        assert!(g.stands(0.5, Duration::from_micros(100)));
    }

    #[test]
    fn the_peak_forgets_old_cycles() {
        let mut g = QueueGauge::new(2);
        g.handle_sample(at(0), 0, 100 * MS, 20 * MS);
        g.handle_sample(at(10), 1, 10 * MS, 20 * MS);
        assert_eq!(g.peak(), 0.1);
        g.advance(2);
        g.handle_sample(at(100), 2, 10 * MS, 20 * MS);
        assert!((g.peak() - 0.01).abs() < 1e-9);
        assert!(g.stands(0.5, MS), "the competitor's queue is the new peak");
    }

    #[test]
    fn after_a_decrease_only_new_samples_count() {
        let mut g = QueueGauge::new(2);
        g.handle_sample(at(0), 0, 40 * MS, 20 * MS);
        g.restart(at(5), at(30));
        g.handle_sample(at(10), 0, 40 * MS, 20 * MS);
        assert!(!g.stands(0.5, MS), "a report of the queue before the decrease");
        g.handle_sample(at(30), 0, 30 * MS, 20 * MS);
        assert!(g.stands(0.5, MS), "still standing after it");
    }

    #[test]
    fn a_silence_longer_than_two_buckets_forgets_the_recent_queue() {
        let mut g = QueueGauge::new(2);
        g.handle_sample(at(0), 0, 40 * MS, 20 * MS);
        g.handle_sample(at(100), 0, Duration::ZERO, 20 * MS);
        assert_eq!(g.recent(), 0.0);
    }

    #[test]
    fn a_queue_back_at_the_answered_depth_is_held_and_one_left_lower_is_not() {
        let floor = MS;
        let mut g = QueueGauge::new(2);
        g.handle_sample(at(0), 0, 40 * MS, 20 * MS);
        g.restart(at(10), at(60));
        // The flow's own queue, left at half the depth by a decrease that was not quite enough.
        g.handle_sample(at(70), 0, 20 * MS, 20 * MS);
        assert!(!g.held_since_decrease(floor));
        // Refilled to the depth the decrease answered: another flow fills it.
        g.handle_sample(at(95), 0, 40 * MS, 20 * MS);
        assert!(g.held_since_decrease(floor));
        // Forgotten once it no longer stands after the quiet.
        g.forget_decrease(at(100));
        assert!(!g.held_since_decrease(floor));
    }

    #[test]
    fn a_queue_that_falls_after_a_decrease_drains_and_one_that_holds_does_not() {
        let floor = MS;
        let mut g = QueueGauge::new(2);
        g.handle_sample(at(0), 0, 40 * MS, 20 * MS);
        g.restart(at(10), at(60));
        // Falling by more than the floor since the decrease, then since the last check.
        g.handle_sample(at(70), 0, 35 * MS, 20 * MS);
        assert!(g.check_draining(floor));
        g.handle_sample(at(95), 0, 30 * MS, 20 * MS);
        assert!(g.check_draining(floor));
        // A second check in the same bucket keeps the verdict: the bucket's maximum has not
        // had a round to fall.
        g.handle_sample(at(100), 0, 30 * MS, 20 * MS);
        assert!(g.check_draining(floor));
        // It holds: answered.
        g.handle_sample(at(120), 0, 30 * MS, 20 * MS);
        assert!(!g.check_draining(floor));
        g.handle_sample(at(125), 0, 10 * MS, 20 * MS);
        assert!(!g.check_draining(floor), "within the bucket that held");
        // Once it no longer stood after the quiet, a new queue is measured from nothing.
        g.restart(at(130), at(180));
        g.forget_decrease(at(150));
        g.handle_sample(at(190), 0, 20 * MS, 20 * MS);
        assert!(g.check_draining(floor), "within the quiet the decrease's depth is kept");
        g.forget_decrease(at(200));
        g.handle_sample(at(215), 0, 20 * MS, 20 * MS);
        assert!(!g.check_draining(floor));
    }
}
