//! The GTP group manager: one per receiver, shared by the controllers of every connection that
//! receives through it, computing a max-min fair allocation of the receiver's capacity.
//!
//! GTP (Wu & Chien, CCGrid 2004) is receiver-driven: the receiver knows its own capacity and sees
//! every flow arriving, so it decides how fast each sender may send. Each receiving controller
//! reports a [`Report`] (arrival rate and loss fraction over its last control interval); the
//! manager turns the flow's report into a *demand* and re-divides the capacity over the demands
//! of all active flows with [`max_min`] (water-filling):
//!
//! * **Demand from the measurement.** A flow is *limited elsewhere* (by its application, its
//!   sender or an upstream bottleneck) when its measured rate `m` stays below the rate it was
//!   allowed: `m * (1 + headroom / 2) < expected`, where `expected` is the smallest allocation
//!   that could have governed the whole interval (the last allocation sent at least
//!   `horizon = interval + RTT` ago and every one sent since). Its demand is then
//!   `m * (1 + headroom)`: what it uses plus room to grow. A flow that uses its allocation, or
//!   whose allocation is too recent to judge, is unconstrained.
//! * **Loss-based adjustment.** When the loss fraction of the interval exceeds `loss_threshold`,
//!   the flow's demand is capped at 7/8 of its measured arrival rate (what got through the
//!   bottleneck that dropped packets, less [`LOSS_DECREASE`]: capping at the arrival rate itself
//!   would keep the bottleneck's queue full, since the sender also retransmits and the connection
//!   sends every 16th packet unpaced). Each loss-free interval raises the cap by
//!   `(1 + headroom)`; the cap is dropped once it reaches the capacity.
//! * **Rate requests** from senders cap the demand as well (GTP's per-flow requests).
//!
//! The allocation is `max(fair share, MIN_RATE)` and is remembered per flow so that the next
//! report can be judged against it. Flows leave on [`GroupManager::remove`] (the controller's
//! `close`) or when nothing was heard from them for `idle` (checked on every report: a silent
//! flow gets no callbacks that could remove it).
//!
//! Invariants: the manager only sees times it is given; it tolerates times slightly out of order
//! across flows (every difference saturates). Sum of allocations <= capacity whenever the
//! capacity is at least `MIN_RATE` per flow. Flow ids are never reused.
//!
//! Deviations from the paper: GTP also runs a TCP-friendly centralized scheduler across
//! receivers and estimates the capacity; here the capacity is configured and only the single
//! receiver's max-min allocation is implemented.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use udt_proto::time::Instant;

/// The smallest rate ever allocated, bits/s (a flow is never starved to zero: it must keep
/// sending to be measured).
pub const MIN_RATE: u64 = 64_000;

/// The cut below the measured arrival rate when a flow loses packets (UDT native's 1/8).
pub const LOSS_DECREASE: f64 = 1.0 / 8.0;

/// Identifies one flow (one receiving connection) within a manager.
pub type FlowId = u64;

/// What the manager allocates with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ManagerConfig {
    /// The receiver's capacity shared by the group, bits/s of MSS-sized packets.
    pub capacity: u64,
    /// Room given to a flow limited elsewhere, as a fraction of its measured rate; also the
    /// per-interval growth of a loss cap.
    pub headroom: f64,
    /// Loss fraction of an interval above which the flow's demand is capped at its arrival rate.
    pub loss_threshold: f64,
    /// A flow not heard from for this long is removed.
    pub idle: Duration,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        ManagerConfig {
            capacity: 1_000_000_000,
            headroom: 0.1,
            loss_threshold: 0.01,
            idle: Duration::from_millis(500),
        }
    }
}

/// One control interval of one flow, as measured by its receiving controller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Report {
    /// End of the interval.
    pub now: Instant,
    /// Arrival rate over the interval, bits/s of MSS-sized packets.
    pub arrival_bps: u64,
    /// Packets detected lost / (received + lost) over the interval.
    pub loss_fraction: f64,
    /// How long an allocation takes to govern a whole interval: interval + RTT.
    pub horizon: Duration,
}

#[derive(Debug)]
struct Flow {
    last_seen: Instant,
    /// `None`: unconstrained.
    demand: Option<u64>,
    /// Ceiling after loss.
    loss_cap: Option<u64>,
    /// The sender's request.
    request: Option<u64>,
    /// Allocations sent, oldest first: (when, bits/s).
    history: VecDeque<(Instant, u64)>,
}

impl Flow {
    fn new(now: Instant) -> Self {
        Flow { last_seen: now, demand: None, loss_cap: None, request: None, history: VecDeque::new() }
    }

    /// The smallest allocation that could have governed the interval ending at `now`, and drop
    /// history older than the one in effect at `now - horizon`.
    fn expected(&mut self, now: Instant, horizon: Duration) -> Option<u64> {
        let cutoff = now - horizon;
        let in_effect = self.history.iter().rposition(|&(t, _)| t <= cutoff)?;
        self.history.drain(..in_effect);
        self.history.iter().map(|&(_, r)| r).min()
    }
}

/// The receiver-side group: every active flow's demand and its allocations.
#[derive(Debug)]
pub struct GroupManager {
    config: ManagerConfig,
    flows: BTreeMap<FlowId, Flow>,
    next_id: FlowId,
}

fn scale(bits: u64, factor: f64) -> u64 {
    (bits as f64 * factor).round() as u64
}

impl GroupManager {
    /// An empty group.
    pub fn new(config: ManagerConfig) -> Self {
        GroupManager { config, flows: BTreeMap::new(), next_id: 1 }
    }

    /// The configuration.
    pub fn config(&self) -> &ManagerConfig {
        &self.config
    }

    /// A new flow, unconstrained until it reports.
    pub fn register(&mut self, now: Instant) -> FlowId {
        let id = self.next_id;
        self.next_id += 1;
        self.flows.insert(id, Flow::new(now));
        id
    }

    /// Remove a flow (its connection closed); whether it was there.
    pub fn remove(&mut self, id: FlowId) -> bool {
        self.flows.remove(&id).is_some()
    }

    /// Active flows.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether no flow is active.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// The sender of `id` asks for at most `bits_per_sec` (0: no limit).
    pub fn set_request(&mut self, id: FlowId, now: Instant, bits_per_sec: u64) {
        let flow = self.flows.entry(id).or_insert_with(|| Flow::new(now));
        flow.request = (bits_per_sec > 0).then_some(bits_per_sec);
        flow.last_seen = flow.last_seen.max(now);
    }

    /// Each active flow's current demand (`None`: unconstrained), by id.
    pub fn demands(&self) -> Vec<(FlowId, Option<u64>)> {
        self.flows.iter().map(|(&id, f)| (id, f.demand)).collect()
    }

    /// Take `report` for flow `id` (re-admitting it if it had expired), drop idle flows and
    /// return the flow's new allocation in bits/s.
    pub fn report(&mut self, id: FlowId, report: &Report) -> u64 {
        let c = self.config;
        let now = report.now;
        let m = report.arrival_bps;
        let flow = self.flows.entry(id).or_insert_with(|| Flow::new(now));
        flow.last_seen = flow.last_seen.max(now);
        let limited = flow
            .expected(now, report.horizon)
            .is_some_and(|expected| scale(m, 1.0 + c.headroom / 2.0) < expected);
        flow.loss_cap = if report.loss_fraction > c.loss_threshold {
            Some(scale(m, 1.0 - LOSS_DECREASE).max(MIN_RATE))
        } else {
            flow.loss_cap.map(|cap| scale(cap, 1.0 + c.headroom)).filter(|&cap| cap < c.capacity)
        };
        let measured = limited.then(|| scale(m, 1.0 + c.headroom));
        flow.demand = [measured, flow.loss_cap, flow.request].into_iter().flatten().min();

        self.flows.retain(|&k, f| k == id || now.saturating_since(f.last_seen) <= c.idle);
        let demands: Vec<Option<u64>> = self.flows.values().map(|f| f.demand).collect();
        let shares = max_min(c.capacity, &demands);
        let index = self.flows.keys().position(|&k| k == id);
        let allocation = index.and_then(|i| shares.get(i)).copied().unwrap_or(MIN_RATE).max(MIN_RATE);
        if let Some(flow) = self.flows.get_mut(&id) {
            flow.history.push_back((now, allocation));
        }
        allocation
    }
}

/// Max-min fair shares of `capacity` for `demands` (`None`: unconstrained), in the same order:
/// flows demanding less than an equal share get their demand, the rest share what is left
/// equally (integer division; the remainder of at most n - 1 bits/s is left unallocated).
pub fn max_min(capacity: u64, demands: &[Option<u64>]) -> Vec<u64> {
    let mut order: Vec<usize> = (0..demands.len()).collect();
    order.sort_by_key(|&i| demands[i].unwrap_or(u64::MAX));
    let mut shares = vec![0; demands.len()];
    let mut remaining = capacity;
    for (k, &i) in order.iter().enumerate() {
        let left = (order.len() - k) as u64;
        let share = remaining / left;
        match demands[i] {
            Some(d) if d <= share => {
                shares[i] = d;
                remaining -= d;
            }
            _ => {
                for &j in &order[k..] {
                    shares[j] = share;
                }
                break;
            }
        }
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1_000_000_000;
    const M: u64 = 1_000_000;

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    fn report(ms: u64, arrival_bps: u64, loss_fraction: f64) -> Report {
        Report { now: at(ms), arrival_bps, loss_fraction, horizon: Duration::from_millis(20) }
    }

    #[test]
    fn water_filling() {
        assert_eq!(max_min(G, &[None, None, None]), [333_333_333; 3]);
        assert_eq!(max_min(G, &[None, Some(110 * M), None]), [445 * M, 110 * M, 445 * M]);
        // Two small demands, one large: 100 + 200 satisfied, the third gets the rest.
        assert_eq!(max_min(G, &[Some(900 * M), Some(100 * M), Some(200 * M)]), [700 * M, 100 * M, 200 * M]);
        // Demands above the equal share are cut to it.
        assert_eq!(max_min(G, &[Some(600 * M), Some(700 * M)]), [500 * M, 500 * M]);
        // Everyone satisfied: capacity left over.
        assert_eq!(max_min(G, &[Some(10 * M), Some(20 * M)]), [10 * M, 20 * M]);
        assert_eq!(max_min(G, &[]), Vec::<u64>::new());
    }

    #[test]
    fn three_flows_share_equally() {
        let mut g = GroupManager::new(ManagerConfig::default());
        let ids: Vec<FlowId> = (0..3).map(|_| g.register(at(0))).collect();
        for &id in &ids {
            assert_eq!(g.report(id, &report(10, 5 * M, 0.0)), 333_333_333);
        }
        assert_eq!(g.len(), 3);
    }

    #[test]
    fn a_flow_using_less_gets_its_demand_plus_headroom() {
        let mut g = GroupManager::new(ManagerConfig::default());
        let (a, b, c) = (g.register(at(0)), g.register(at(0)), g.register(at(0)));
        for id in [a, b, c] {
            assert_eq!(g.report(id, &report(10, 5 * M, 0.0)), 333_333_333);
        }
        // 30 ms later (beyond the 20 ms horizon), flow b measures 100 Mb/s against 333: it is
        // limited elsewhere and gets 100 + 10 % headroom; the others share the remaining 890.
        assert_eq!(g.report(b, &report(40, 100 * M, 0.0)), 110 * M);
        assert_eq!(g.demands(), [(a, None), (b, Some(110 * M)), (c, None)]);
        assert_eq!(g.report(a, &report(40, 333 * M, 0.0)), 445 * M);
        assert_eq!(g.report(c, &report(40, 333 * M, 0.0)), 445 * M);
        // Still 100 Mb/s against 110 allowed: 100 * 1.05 < 110, still limited.
        assert_eq!(g.report(b, &report(70, 100 * M, 0.0)), 110 * M);
        // Using the whole 110: unconstrained again, back to an equal share.
        assert_eq!(g.report(b, &report(100, 110 * M, 0.0)), 333_333_333);
    }

    #[test]
    fn a_recent_allocation_is_not_judged() {
        let mut g = GroupManager::new(ManagerConfig::default());
        let a = g.register(at(0));
        assert_eq!(g.report(a, &report(10, 5 * M, 0.0)), G);
        // 10 ms after the 1 Gb/s allocation (horizon 20 ms): 5 Mb/s says nothing yet.
        assert_eq!(g.report(a, &report(20, 5 * M, 0.0)), G);
        // 30 ms after it: limited, 5.5 Mb/s.
        assert_eq!(g.report(a, &report(40, 5 * M, 0.0)), 5_500_000);
    }

    #[test]
    fn loss_caps_the_demand_and_the_cap_grows_back() {
        let mut g = GroupManager::new(ManagerConfig { capacity: 300 * M, ..ManagerConfig::default() });
        let (a, b) = (g.register(at(0)), g.register(at(0)));
        assert_eq!(g.report(a, &report(10, 150 * M, 0.0)), 150 * M);
        // Flow b loses 5 % at 80 Mb/s: capped at 7/8 of it, 70; a gets the other 230.
        assert_eq!(g.report(b, &report(10, 80 * M, 0.05)), 70 * M);
        assert_eq!(g.report(a, &report(20, 150 * M, 0.0)), 230 * M);
        // A loss-free interval raises the cap by 10 %: 77.
        assert_eq!(g.report(b, &report(20, 70 * M, 0.0)), 77 * M);
        // Below the threshold (1 %) counts as loss-free: 84.7.
        assert_eq!(g.report(b, &report(30, 77 * M, 0.005)), 84_700_000);
    }

    #[test]
    fn requests_cap_the_demand() {
        let mut g = GroupManager::new(ManagerConfig { capacity: 300 * M, ..ManagerConfig::default() });
        let (a, b) = (g.register(at(0)), g.register(at(0)));
        g.set_request(a, at(0), 50 * M);
        assert_eq!(g.report(a, &report(10, 10 * M, 0.0)), 50 * M);
        assert_eq!(g.report(b, &report(10, 10 * M, 0.0)), 250 * M);
        g.set_request(a, at(10), 0);
        assert_eq!(g.report(a, &report(20, 10 * M, 0.0)), 150 * M);
    }

    #[test]
    fn removal_and_idle_expiry() {
        let mut g = GroupManager::new(ManagerConfig { capacity: 300 * M, ..ManagerConfig::default() });
        let (a, b, c) = (g.register(at(0)), g.register(at(0)), g.register(at(0)));
        assert_eq!(g.report(a, &report(10, M, 0.0)), 100 * M);
        assert!(g.remove(c));
        assert!(!g.remove(c));
        assert_eq!(g.report(a, &report(20, M, 0.0)), 150 * M);
        // b has been silent since 0; at 600 ms (idle 500 ms) it is dropped.
        assert_eq!(g.report(a, &report(600, 150 * M, 0.0)), 300 * M);
        assert_eq!(g.len(), 1);
        // A late report re-admits b.
        assert_eq!(g.report(b, &report(610, M, 0.0)), 150 * M);
        assert_eq!(g.len(), 2);
        // Never below MIN_RATE.
        let mut tiny = GroupManager::new(ManagerConfig { capacity: 1000, ..ManagerConfig::default() });
        let t = tiny.register(at(0));
        assert_eq!(tiny.report(t, &report(10, 1, 0.0)), MIN_RATE);
    }
}
