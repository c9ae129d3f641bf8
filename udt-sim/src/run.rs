//! Running a network for a while and sampling every flow; the measures over a window.
//!
//! [`run`] advances the simulation one sampling interval at a time and records each flow's
//! cumulative counters at every boundary. A flow's throughput in an interval is the new data
//! delivered to its receiver in that interval counted at IP packet size (1500 bytes per
//! 1456-byte payload for UDT), in Mb/s: the share of the link that carried useful packets, as
//! the thesis' simulations count it. Retransmitted duplicates do not count.
//!
//! [`RunTrace::measures`] computes the measures of [`crate::metrics`] over a time window, with
//! stability over coarser samples (the thesis uses 1 s) built from the fine ones.

use std::ops::Range;
use std::time::Duration;

use serde::Serialize;

use crate::engine::EngineStats;
use crate::link::LinkStats;
use crate::metrics;
use crate::network::{FlowProgress, Network};

/// One flow's samples.
#[derive(Clone, Debug)]
pub struct FlowTrace {
    /// Its label.
    pub label: String,
    /// Congestion control as a catalog specification (`udt`, `newreno:ack=1`, ...) or `cbr`.
    pub cc: String,
    /// Whether the flow runs a TCP-like (window-based, ACK-clocked) controller.
    pub tcp_like: bool,
    /// Start time.
    pub start: Duration,
    /// Stop time.
    pub stop: Option<Duration>,
    /// Throughput in each interval, Mb/s of IP packets.
    pub mbps: Vec<f64>,
    /// Cumulative counters at each interval boundary (one more than `mbps`).
    pub progress: Vec<FlowProgress>,
}

impl FlowTrace {
    /// Whether the flow runs during the whole of sample `k` of length `interval`.
    pub fn active_in(&self, k: usize, interval: Duration) -> bool {
        let from = interval * k as u32;
        let to = from + interval;
        self.start <= from && self.stop.is_none_or(|s| s >= to)
    }

    /// Whether this is a TCP-like flow.
    pub fn is_tcp(&self) -> bool {
        self.tcp_like
    }
}

/// Everything sampled in one run.
#[derive(Clone, Debug)]
pub struct RunTrace {
    /// Seed of the run.
    pub seed: u64,
    /// Virtual time simulated.
    pub duration: Duration,
    /// Sampling interval.
    pub interval: Duration,
    /// Per-flow samples.
    pub flows: Vec<FlowTrace>,
    /// Engine counters at the end.
    pub engine: EngineStats,
    /// Wall-clock time the run took.
    pub wall: Duration,
    /// Trace hash at the end.
    pub trace_hash: u64,
    /// Counters of every used link at the end.
    pub links: Vec<(String, LinkStats)>,
}

/// The measures of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Measures {
    /// Sum of the measured flows' mean throughputs, Mb/s.
    pub efficiency_mbps: f64,
    /// Efficiency over the capacity.
    pub utilization: f64,
    /// Jain's fairness index of the measured flows.
    pub fairness: f64,
    /// Stability index.
    pub stability: f64,
    /// Data packets lost over data packets sent, measured flows.
    pub loss_rate: f64,
    /// Longest time a measured flow took to reach and hold 90% of its fair share, s.
    pub convergence_s: Option<f64>,
    /// TCP friendliness index, when TCP flows take part and a TCP-only baseline was run.
    pub friendliness: Option<f64>,
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct Window {
    /// Start of the window (after warm-up).
    pub from: Duration,
    /// End of the window.
    pub to: Duration,
    /// Capacity the efficiency is compared with, bits/s.
    pub capacity_bps: f64,
    /// Sample length for stability (a multiple of the sampling interval).
    pub stability_interval: Duration,
    /// How long a flow must hold 90% of its fair share to count as converged.
    pub hold: Duration,
}

/// Run `net` for `duration`, sampling every `interval`.
pub fn run(net: &mut Network, duration: Duration, interval: Duration) -> RunTrace {
    let wall = std::time::Instant::now();
    let interval = interval.max(Duration::from_micros(1));
    let steps = (duration.as_nanos() / interval.as_nanos()).max(1) as usize;
    let mut flows: Vec<FlowTrace> = net
        .flows()
        .iter()
        .map(|f| FlowTrace {
            label: f.spec.label.clone(),
            cc: f.spec.cc().map_or_else(|| "cbr".to_string(), |c| c.label()),
            tcp_like: f.spec.cc().is_some_and(|c| c.is_tcp()),
            start: f.spec.start,
            stop: f.spec.stop,
            mbps: Vec::with_capacity(steps),
            progress: Vec::with_capacity(steps + 1),
        })
        .collect();
    let factors: Vec<f64> = net.flows().iter().map(|f| f.wire_factor()).collect();
    let base = net.elapsed();
    for (i, f) in flows.iter_mut().enumerate() {
        f.progress.push(net.progress(i));
    }
    for k in 1..=steps {
        net.run_until(base + interval * k as u32);
        for (i, f) in flows.iter_mut().enumerate() {
            let p = net.progress(i);
            let prev = f.progress.last().map_or(0, |q| q.bytes);
            let bits = (p.bytes - prev) as f64 * 8.0 * factors[i];
            f.mbps.push(bits / interval.as_secs_f64() / 1e6);
            f.progress.push(p);
        }
    }
    let sim = net.sim();
    let links = net
        .links()
        .iter()
        .filter(|l| l.used)
        .filter_map(|l| sim.link(l.node).map(|x| (l.name.clone(), x.stats())))
        .collect();
    RunTrace {
        seed: net.seed(),
        duration: interval * steps as u32,
        interval,
        flows,
        engine: sim.stats(),
        wall: wall.elapsed(),
        trace_hash: sim.trace_hash(),
        links,
    }
}

impl RunTrace {
    /// Sample indices lying wholly inside [from, to).
    pub fn samples(&self, from: Duration, to: Duration) -> Range<usize> {
        let i = self.interval.as_nanos();
        let a = from.as_nanos().div_ceil(i) as usize;
        let b = (to.as_nanos() / i) as usize;
        a.min(self.flows.first().map_or(0, |f| f.mbps.len()))
            ..b.min(self.flows.first().map_or(0, |f| f.mbps.len()))
    }

    /// Mean throughput of flow `i` over samples `r`, Mb/s.
    pub fn mean_mbps(&self, i: usize, r: Range<usize>) -> f64 {
        self.flows.get(i).map_or(0.0, |f| metrics::mean(f.mbps.get(r).unwrap_or(&[])))
    }

    /// Data packets sent by all UDT flows during the run.
    pub fn data_packets(&self) -> u64 {
        self.flows.iter().filter_map(|f| f.progress.last()).map(|p| p.sent_pkts).sum()
    }

    /// Datagrams handed to nodes per wall-clock second.
    pub fn deliveries_per_sec(&self) -> f64 {
        self.engine.deliveries as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// The measures of flows `which` over `w`.
    pub fn measures(&self, w: &Window, which: &[usize]) -> Measures {
        let r = self.samples(w.from, w.to);
        let avgs: Vec<f64> = which.iter().map(|&i| self.mean_mbps(i, r.clone())).collect();
        let e = metrics::efficiency(&avgs);
        // Stability over coarser samples.
        let group = (w.stability_interval.as_nanos() / self.interval.as_nanos()).max(1) as usize;
        let coarse: Vec<Vec<f64>> = which
            .iter()
            .filter_map(|&i| self.flows.get(i))
            .map(|f| {
                f.mbps
                    .get(r.clone())
                    .unwrap_or(&[])
                    .chunks_exact(group)
                    .map(metrics::mean)
                    .collect::<Vec<f64>>()
            })
            .collect();
        let refs: Vec<&[f64]> = coarse.iter().map(|v| v.as_slice()).collect();
        // Loss over the window from cumulative counters.
        let (mut sent, mut recv) = (0u64, 0u64);
        for &i in which {
            let Some(f) = self.flows.get(i) else { continue };
            if let (Some(a), Some(b)) = (f.progress.get(r.start), f.progress.get(r.end)) {
                sent += b.sent_pkts - a.sent_pkts;
                recv += b.recv_pkts - a.recv_pkts;
            }
        }
        let loss_rate = if sent > 0 { sent.saturating_sub(recv) as f64 / sent as f64 } else { 0.0 };
        Measures {
            efficiency_mbps: e,
            utilization: if w.capacity_bps > 0.0 { e * 1e6 / w.capacity_bps } else { 0.0 },
            fairness: metrics::jain(&avgs),
            stability: metrics::stability(&refs),
            loss_rate,
            convergence_s: self.convergence(w, which),
            friendliness: None,
        }
    }

    /// Longest time any of `which` took from its start to reach 90% of its fair share of
    /// `capacity` and hold it for `hold`; `None` if one never did.
    pub fn convergence(&self, w: &Window, which: &[usize]) -> Option<f64> {
        let n = self.flows.first().map_or(0, |f| f.mbps.len());
        let hold = (w.hold.as_nanos() / self.interval.as_nanos()).max(1) as usize;
        let mut worst: f64 = 0.0;
        for &i in which {
            let f = self.flows.get(i)?;
            let first = f.start.as_nanos().div_ceil(self.interval.as_nanos()) as usize;
            let share = |k: usize| {
                let active = which.iter().filter(|&&j| self.flows[j].active_in(k, self.interval)).count();
                w.capacity_bps / 1e6 / active.max(1) as f64
            };
            let end = n.saturating_sub(hold - 1);
            let k = (first..end).find(|&k| (k..k + hold).all(|j| f.mbps[j] >= 0.9 * share(j)))?;
            let t = (self.interval * (k as u32 + 1)).saturating_sub(f.start);
            worst = worst.max(t.as_secs_f64());
        }
        Some(worst)
    }

    /// Counters of the link named `name` at the end.
    pub fn link(&self, name: &str) -> Option<LinkStats> {
        self.links.iter().find(|(n, _)| n == name).map(|(_, s)| *s)
    }
}
