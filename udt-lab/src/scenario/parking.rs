//! Thesis Fig. 4-10 / Table 4-2 (§4.1.1): six UDT flows on a six-node parking lot.
//!
//! **The topology is a reconstruction.** The thesis' text gives 6 nodes in a chain, 10 ms RTT
//! between adjacent nodes, DropTail everywhere, 6 flows, and Table 4-2 (Mb/s): 89.3, 90.0,
//! 5.18, 41.7, 50.8, 4.78. The capacities and the flows' paths are only in the figure, which
//! our copy does not carry. We chose the chain whose max-min fair allocation is closest to the
//! table with 100 and 10 Mb/s links, under two constraints the table itself imposes: the
//! thesis' throughputs must fit every link (their sum on a link at most its capacity), and every
//! bottleneck they fill is above 90% ("the aggregate throughput for each bottleneck link reaches
//! more than 90%"). Reasoning:
//!
//! * flows 3 and 6 (5.18, 4.78) are the only slow ones: they share a 10 Mb/s link, 5 each;
//! * flows 1 and 2 (89.3, 90.0) each share a 100 Mb/s link with both of them (100 - 5 - 5 =
//!   90), and not with each other;
//! * flows 4 and 5 (41.7 + 50.8 = 92.5) share a 100 Mb/s link with one of flows 3 and 6 only
//!   (with both, 41.7 + 50.8 + 5.18 + 4.78 = 102.5 would exceed it): 47.5 each.
//!
//! An exhaustive search over every chain of five 100 or 10 Mb/s links and every assignment of
//! the six flows to sub-paths (one direction) finds no allocation closer to the table (sum of
//! squared relative errors 0.027) among those the table's numbers fit. This one:
//!
//! ```text
//!   n1 --L1 100-- n2 --L2 10-- n3 --L3 100-- n4 --L4 100-- n5 --L5 100-- n6
//!   flow 1: n1 -> n2 (L1)            share 90     (L1 with flows 3 and 6)
//!   flow 2: n3 -> n4 (L3)            share 90     (L3 with flows 3 and 6)
//!   flow 3: n1 -> n4 (L1 L2 L3)      share  5     (L2, 10 Mb/s, with flow 6)
//!   flow 4: n4 -> n6 (L4 L5)         share 47.5   (L4 with flows 5 and 6)
//!   flow 5: n4 -> n5 (L4)            share 47.5
//!   flow 6: n1 -> n5 (L1 L2 L3 L4)   share  5
//! ```
//!
//! L1-L4 are bottlenecks (full in the max-min allocation; the thesis' numbers fill them to
//! 99.3%, 99.6%, 100% and 97.3%); L5 carries flow 4 alone and is not one. Which of flows 3 and 6
//! reaches L4, and whether flow 4 or 5 continues over L5, the table cannot tell; we let the
//! flows with the smaller numbers take the longer paths. Each link has 5 ms of delay each way
//! and a DropTail queue of max(BDP, 10) packets at the longest RTT of the flows crossing it.

use std::time::Duration;

use super::efficiency::{mbps, num};
use super::{ms, report, run_result, Params};
use crate::report::{Report, RunParams, RunResult};
use udt_sim::flow::FlowSpec;
use udt_sim::link::{bdp_packets, LinkConfig, QueueConfig};
use udt_sim::metrics::{jain_normalised, max_min_shares};
use udt_sim::run::{run, Window};
use udt_sim::topology::shapes::{parking_link_name, parking_lot};

pub(super) const FIG4_10: &str =
    "6 UDT flows on a 6-node parking lot (reconstructed: 100/10/100/100/100 Mb/s): Table 4-2";

/// Capacities of the chain's links L1..L5, Mb/s (reconstruction, module docs).
pub const PARKING_LOT_MBPS: [f64; 5] = [100.0, 10.0, 100.0, 100.0, 100.0];

/// Flows 1..6 of Fig. 4-10 as (first node, last node), nodes 0..5 (reconstruction, module
/// docs): flow (a, b) crosses links a..b.
pub const PARKING_LOT_FLOWS: [(usize, usize); 6] = [(0, 1), (2, 3), (0, 3), (3, 5), (3, 4), (0, 4)];

/// Thesis Table 4-2, Mb/s, flows 1..6.
pub const TABLE_4_2: [f64; 6] = [89.3, 90.0, 5.18, 41.7, 50.8, 4.78];

/// The links flow `f` crosses.
fn path(f: usize) -> Vec<usize> {
    let (a, b) = PARKING_LOT_FLOWS[f];
    (a..b).collect()
}

/// The flows crossing link `l`.
fn crossing(l: usize) -> Vec<usize> {
    (0..PARKING_LOT_FLOWS.len()).filter(|&f| path(f).contains(&l)).collect()
}

/// Max-min fair shares of flows 1..6 on the reconstructed topology, Mb/s: 90, 90, 5, 47.5,
/// 47.5, 5.
pub fn parking_lot_shares() -> Vec<f64> {
    let paths: Vec<Vec<usize>> = (0..PARKING_LOT_FLOWS.len()).map(path).collect();
    let refs: Vec<&[usize]> = paths.iter().map(Vec::as_slice).collect();
    max_min_shares(&PARKING_LOT_MBPS, &refs)
}

/// Whether link `l` is a bottleneck of the max-min allocation (full).
pub fn parking_lot_bottleneck(l: usize) -> bool {
    let shares = parking_lot_shares();
    let load: f64 = crossing(l).iter().map(|&f| shares[f]).sum();
    load >= PARKING_LOT_MBPS[l] * (1.0 - 1e-9)
}

/// Fig. 4-10 / Table 4-2. Rows: the six flows, then each link (the flows crossing it).
/// `rtt` is the RTT between adjacent nodes (10 ms), `queue` overrides every link's queue.
pub(super) fn fig4_10(p: &Params) -> Result<Report, String> {
    let hop_rtt = ms(p.rtt_ms.unwrap_or(10.0));
    let time = p.time(40.0, 100.0);
    let warmup = p.warmup(time, 0.3);
    let sample = p.sample(0.1);
    let cc = p.cc.unwrap_or_default();
    let n_links = PARKING_LOT_MBPS.len();
    let rtt_of = |f: usize| hop_rtt * path(f).len() as u32;
    let queues: Vec<usize> = (0..n_links)
        .map(|l| {
            let rtt = crossing(l).into_iter().map(rtt_of).max().unwrap_or(hop_rtt);
            p.queue_pkts.unwrap_or_else(|| bdp_packets(mbps(PARKING_LOT_MBPS[l]), rtt, 1500).max(10))
        })
        .collect();
    let chain: Vec<LinkConfig> = (0..n_links)
        .map(|l| LinkConfig {
            queue: QueueConfig::DropTailPackets(queues[l]),
            ..LinkConfig::new(mbps(PARKING_LOT_MBPS[l]), hop_rtt / 2, 0)
        })
        .collect();
    let mut lot = parking_lot(&chain);
    for (f, &(a, b)) in PARKING_LOT_FLOWS.iter().enumerate() {
        let spec = FlowSpec::udt(format!("flow{}", f + 1), lot.hosts[a], lot.hosts[b], cc);
        lot.topo.flow(spec);
    }
    if let Some(path) = &p.pcap {
        lot.topo.capture(lot.links[1], path.clone());
    }
    let mut net = lot.topo.build(p.seed)?;
    let trace = run(&mut net, time, sample);
    if p.pcap.is_some() {
        net.finish_captures().map_err(|e| format!("pcap: {e}"))?;
    }

    let shares = parking_lot_shares();
    let window = |capacity_mbps: f64| Window {
        from: warmup,
        to: time,
        capacity_bps: capacity_mbps * 1e6,
        stability_interval: Duration::from_secs(1),
        hold: Duration::from_secs(1),
    };
    let params = |bw_mbps: f64, flows: &[usize], queue_pkts: usize| RunParams {
        bw_mbps,
        rtt_ms: flows.iter().map(|&f| rtt_of(f).as_secs_f64() * 1e3).collect(),
        queue: "droptail".into(),
        queue_pkts,
        flows: flows.len(),
        cc: cc.label(),
        time_s: time.as_secs_f64(),
        warmup_s: warmup.as_secs_f64(),
        sample_s: sample.as_secs_f64(),
        seed: p.seed,
        ..RunParams::default()
    };
    let all: Vec<usize> = (0..PARKING_LOT_FLOWS.len()).collect();
    let share_sum: f64 = shares.iter().sum();
    let thesis_f = jain_normalised(&TABLE_4_2, &shares);
    let mut rows: Vec<RunResult> = Vec::new();
    // The link rows first (they need copies of the trace), the flows' row keeps it for plots.
    for l in 0..n_links {
        let flows = crossing(l);
        let cap = PARKING_LOT_MBPS[l];
        let mut r = run_result(
            "",
            params(cap, &flows, queues[l]),
            trace.clone(),
            &window(cap),
            &flows,
            link_thesis(l, &flows, cap),
        );
        // A view of the one simulation, not a run of its own: no trace, wall time or speed.
        r.trace = None;
        (r.wall_s, r.deliveries, r.deliveries_per_sec, r.data_packets) = (0.0, 0, 0.0, 0);
        let ours: Vec<f64> = flows.iter().map(|&f| r.flows[f].mean_mbps).collect();
        let fair: Vec<f64> = flows.iter().map(|&f| shares[f]).collect();
        r.measures.fairness = jain_normalised(&ours, &fair);
        r.flows = flows.iter().map(|&f| r.flows[f].clone()).collect();
        let names: Vec<String> = flows.iter().map(|f| (f + 1).to_string()).collect();
        let kind = if parking_lot_bottleneck(l) { "" } else { " (not a bottleneck)" };
        r.label = format!("{} {}Mb/s [{}]{kind}", parking_link_name(l), num(cap), names.join(" "));
        rows.push(r);
    }
    let mut r = run_result(
        "flows 1-6",
        params(share_sum, &all, queues.iter().copied().max().unwrap_or(0)),
        trace,
        &window(share_sum),
        &all,
        Some(format!("sum {:.1}, F/share {:.3}", TABLE_4_2.iter().sum::<f64>(), thesis_f)),
    );
    let ours: Vec<f64> = r.flows.iter().map(|f| f.mean_mbps).collect();
    r.measures.fairness = jain_normalised(&ours, &shares);
    rows.insert(0, r);

    let mut rep = report(
        "fig4-10",
        FIG4_10,
        "Table 4-2: 89.3 90.0 5.18 41.7 50.8 4.78 Mb/s; every bottleneck above 90%, every flow its fair share",
        p,
    );
    let per_flow: Vec<String> = (0..shares.len())
        .map(|f| format!("{} {:.1} (share {}, thesis {})", f + 1, ours[f], num(shares[f]), num(TABLE_4_2[f])))
        .collect();
    rep.runs = rows;
    rep.notes.push(format!("per flow, Mb/s, ours (max-min share, thesis): {}", per_flow.join("; ")));
    rep.notes.push(
        "topology reconstructed from Table 4-2 (the figure is not in our copy of the thesis): L1..L5 = \
         100, 10, 100, 100, 100 Mb/s; flow 1 n1-n2, 2 n3-n4, 3 n1-n4, 4 n4-n6, 5 n4-n5, 6 n1-n5; \
         the closest max-min allocation to the table (see udt-lab/README.md)"
            .into(),
    );
    rep.notes.push(format!(
        "every link {} ms each way; DropTail max(BDP at the longest RTT crossing it, 10): {:?} packets",
        num(hop_rtt.as_secs_f64() * 500.0),
        queues
    ));
    rep.notes.push(
        "first row: util% = sum of the flows / sum of max-min shares; link rows: util% = the link's \
         aggregate / capacity; F everywhere is Jain's index of throughput / max-min share"
            .into(),
    );
    Ok(rep)
}

/// The thesis' aggregate on link `l` and its utilization.
fn link_thesis(l: usize, flows: &[usize], cap: f64) -> Option<String> {
    let sum: f64 = flows.iter().map(|&f| TABLE_4_2[f]).sum();
    let tag = if parking_lot_bottleneck(l) { "" } else { ", not a bottleneck" };
    Some(format!("{sum:.1} ({:.1}%{tag})", sum / cap * 100.0))
}
