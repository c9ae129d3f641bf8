//! Queue disciplines of a link's output buffer: DropTail in packets or in bytes, and RED.
//!
//! The link keeps the packets it has accepted as a FIFO backlog of (start, end of
//! serialisation, size), so the occupancy at any instant is known without an event per
//! departure. A packet being serialised is "in service"; the others are "waiting". Limits count
//! waiting packets (or bytes), like NS-2's `DropTail` whose `limit_` is the queue beside the one
//! packet on the wire: a queue of 100 packets holds 100 waiting and one in service.
//!
//! RED follows Floyd & Jacobson (1993) as NS-2.35's `REDQueue` implements it: the average queue
//! is an EWMA of the waiting packets taken at each arrival, decayed over idle periods as if
//! `idle x ptc` small packets had arrived; between the thresholds the drop probability rises
//! linearly to `max_p`, spread uniformly by the count since the last drop ("wait" variant); with
//! `gentle` it rises from `max_p` to 1 between `max_th` and twice `max_th`, beyond which, or above
//! the physical limit, every packet is dropped.
//!
//! Invariants: backlog entries are in arrival order with non-decreasing, non-overlapping
//! serialisation intervals; its byte count is the sum of its entries' sizes.

use std::collections::VecDeque;
use std::time::Duration;

use crate::rng::SimRng;

/// A link's queue discipline and its size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueConfig {
    /// Drop arrivals when this many packets are waiting.
    DropTailPackets(usize),
    /// Drop arrivals that would make the waiting bytes exceed this.
    DropTailBytes(usize),
    /// Random Early Detection.
    Red(RedConfig),
}

impl QueueConfig {
    /// The thesis' queue: DropTail of max(BDP, 10) packets of `packet_bytes` for a link of
    /// `rate_bps` and a round-trip time `rtt`.
    pub fn bdp_droptail(rate_bps: u64, rtt: Duration, packet_bytes: usize) -> Self {
        QueueConfig::DropTailPackets(bdp_packets(rate_bps, rtt, packet_bytes).max(10))
    }
}

/// Bandwidth-delay product in whole packets of `packet_bytes` (rounded to nearest).
pub fn bdp_packets(rate_bps: u64, rtt: Duration, packet_bytes: usize) -> usize {
    (rate_bps as f64 * rtt.as_secs_f64() / (8.0 * packet_bytes.max(1) as f64)).round() as usize
}

/// RED parameters (thresholds and limit in packets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedConfig {
    /// Physical buffer: arrivals finding this many waiting packets are dropped.
    pub limit_pkts: usize,
    /// Average queue below which nothing is dropped.
    pub min_th: f64,
    /// Average queue at which the drop probability reaches `max_p`.
    pub max_th: f64,
    /// Drop probability at `max_th`.
    pub max_p: f64,
    /// EWMA weight of the average queue.
    pub weight: f64,
    /// Rise from `max_p` to 1 between `max_th` and `2 max_th` instead of jumping to 1.
    pub gentle: bool,
    /// NS-2 `wait_`: uniform spacing of drops (no drop until count x p reaches 1).
    pub wait: bool,
    /// Packets per second of average size the link carries (NS-2 `ptc`), for idle decay.
    pub ptc: f64,
}

impl RedConfig {
    /// NS-2.35's automatic configuration (`thresh_ 0`, `maxthresh_ 0`, `q_weight_ -1`,
    /// `targetdelay_ 5 ms`, `linterm_ 10`, `mean_pktsize_ 500`, `gentle_ true`, `wait_ true`)
    /// for a link of `rate_bps` and one-way `delay`, with a physical buffer of `limit_pkts`.
    pub fn ns2_auto(limit_pkts: usize, rate_bps: u64, delay: Duration) -> Self {
        let ptc = rate_bps as f64 / (8.0 * 500.0);
        // red.cc: th_min = max(5, targetdelay * ptc / 2), th_max = 3 th_min
        let min_th = (0.005 * ptc / 2.0).max(5.0);
        // red.cc, q_w == -1: rtt = max(3 (delay + 1/ptc), 0.1); q_w = 1 - exp(-1 / (10 rtt ptc))
        let rtt = (3.0 * (delay.as_secs_f64() + 1.0 / ptc)).max(0.1);
        let weight = 1.0 - (-1.0 / (10.0 * rtt * ptc)).exp();
        RedConfig {
            limit_pkts,
            min_th,
            max_th: 3.0 * min_th,
            max_p: 0.1,
            weight,
            gentle: true,
            wait: true,
            ptc,
        }
    }
}

/// The queue's decision on an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Queued.
    Accept,
    /// The buffer is full.
    Full,
    /// RED dropped it early.
    Early,
}

/// The accepted packets of a link, in order, by time in nanoseconds.
#[derive(Debug, Default, Clone)]
pub(crate) struct Backlog {
    /// (start of serialisation, end of serialisation, wire bytes), ns.
    entries: VecDeque<(u64, u64, u32)>,
    bytes: u64,
}

impl Backlog {
    /// Forget packets whose serialisation ended by `now`.
    pub(crate) fn drain(&mut self, now: u64) {
        while let Some(&(_, end, size)) = self.entries.front() {
            if end > now {
                break;
            }
            self.entries.pop_front();
            self.bytes -= u64::from(size);
        }
    }

    /// Waiting packets and bytes at `now` (after `drain`): all but the one in service.
    pub(crate) fn waiting(&self, now: u64) -> (usize, u64) {
        match self.entries.front() {
            Some(&(start, _, size)) if start <= now => (self.entries.len() - 1, self.bytes - u64::from(size)),
            _ => (self.entries.len(), self.bytes),
        }
    }

    /// Waiting packets and bytes at `now` and whether one is in service, without draining.
    pub(crate) fn occupancy(&self, now: u64) -> (usize, u64, bool) {
        let done = self.entries.partition_point(|&(_, end, _)| end <= now);
        let left = self.entries.iter().skip(done);
        let (mut waiting, mut bytes, mut serving) = (0, 0, false);
        for &(start, _, size) in left {
            if start <= now {
                serving = true;
            } else {
                waiting += 1;
                bytes += u64::from(size);
            }
        }
        (waiting, bytes, serving)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn push(&mut self, start: u64, end: u64, size: u32) {
        self.entries.push_back((start, end, size));
        self.bytes += u64::from(size);
    }
}

/// A queue discipline with its state.
#[derive(Debug, Clone)]
pub(crate) struct Queue {
    config: QueueConfig,
    avg: f64,
    count: i64,
}

impl Queue {
    pub(crate) fn new(config: QueueConfig) -> Self {
        Queue { config, avg: 0.0, count: 0 }
    }

    /// RED's average queue (0 for DropTail).
    pub(crate) fn average(&self) -> f64 {
        self.avg
    }

    /// Decide on an arrival of `size` bytes finding `waiting` packets and `waiting_bytes`
    /// queued; `idle` is how long the link has been empty, if it is.
    pub(crate) fn admit(
        &mut self,
        waiting: usize,
        waiting_bytes: u64,
        size: usize,
        idle: Option<Duration>,
        rng: &mut SimRng,
    ) -> Admission {
        match self.config {
            QueueConfig::DropTailPackets(limit) => {
                if waiting >= limit {
                    Admission::Full
                } else {
                    Admission::Accept
                }
            }
            QueueConfig::DropTailBytes(limit) => {
                if waiting_bytes + size as u64 > limit as u64 {
                    Admission::Full
                } else {
                    Admission::Accept
                }
            }
            QueueConfig::Red(red) => self.red(red, waiting, idle, rng),
        }
    }

    fn red(&mut self, c: RedConfig, waiting: usize, idle: Option<Duration>, rng: &mut SimRng) -> Admission {
        // red.cc enque + estimator: decay over idle time as m small packets, then one update.
        let m = idle.map_or(0.0, |d| (d.as_secs_f64() * c.ptc).floor());
        self.avg *= (1.0 - c.weight).powf(m + 1.0);
        self.avg += c.weight * waiting as f64;
        if waiting >= c.limit_pkts {
            self.count = 0;
            return Admission::Full;
        }
        let avg = self.avg;
        if avg < c.min_th {
            self.count = -1;
            return Admission::Accept;
        }
        let hard = if c.gentle { avg >= 2.0 * c.max_th } else { avg >= c.max_th };
        if hard {
            self.count = 0;
            return Admission::Early;
        }
        self.count += 1;
        // calculate_p_new
        let mut p = if avg >= c.max_th {
            c.max_p + (1.0 - c.max_p) * (avg - c.max_th) / c.max_th
        } else {
            c.max_p * (avg - c.min_th) / (c.max_th - c.min_th).max(1e-9)
        };
        p = p.min(1.0);
        // modify_p
        let cp = self.count as f64 * p;
        let pa = if c.wait {
            if cp < 1.0 {
                0.0
            } else if cp < 2.0 {
                p / (2.0 - cp)
            } else {
                1.0
            }
        } else if cp < 1.0 {
            p / (1.0 - cp)
        } else {
            1.0
        };
        if rng.unit() <= pa.min(1.0) && pa > 0.0 {
            self.count = 0;
            Admission::Early
        } else {
            Admission::Accept
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn droptail_counts_waiting_packets_and_bytes() {
        let mut rng = stream(1, 1);
        let mut q = Queue::new(QueueConfig::DropTailPackets(2));
        assert_eq!(q.admit(1, 0, 100, None, &mut rng), Admission::Accept);
        assert_eq!(q.admit(2, 0, 100, None, &mut rng), Admission::Full);
        let mut q = Queue::new(QueueConfig::DropTailBytes(3000));
        assert_eq!(q.admit(0, 1500, 1500, None, &mut rng), Admission::Accept);
        assert_eq!(q.admit(0, 1501, 1500, None, &mut rng), Admission::Full);
    }

    #[test]
    fn backlog_separates_the_packet_in_service() {
        let mut b = Backlog::default();
        b.push(0, 10, 100);
        b.push(10, 20, 200);
        assert_eq!(b.occupancy(5), (1, 200, true));
        b.drain(5);
        assert_eq!(b.waiting(5), (1, 200));
        assert_eq!(b.occupancy(10), (0, 0, true));
        b.drain(10);
        assert_eq!(b.waiting(10), (0, 0));
        assert_eq!(b.occupancy(20), (0, 0, false));
        b.drain(20);
        assert!(b.is_empty());
    }

    #[test]
    fn red_drops_more_as_the_average_grows() {
        let cfg = RedConfig { weight: 1.0, ..RedConfig::ns2_auto(1000, 10_000_000, Duration::ZERO) };
        assert_eq!(cfg.min_th, 6.25);
        let mut rng = stream(1, 2);
        let mut drops = |waiting: usize| {
            let mut q = Queue::new(QueueConfig::Red(cfg));
            (0..10_000).filter(|_| q.admit(waiting, 0, 1500, None, &mut rng) != Admission::Accept).count()
        };
        assert_eq!(drops(3), 0);
        let mid = drops(12);
        let high = drops(30);
        assert!(mid > 0 && high > mid, "{mid} {high}");
        assert_eq!(drops(40), 10_000);
    }
}
