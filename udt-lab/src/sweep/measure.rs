//! Running one drawn scenario and its figures.
//!
//! The scenario becomes a [`DumbbellRun`]: its UDT flows with the sweep's controller, then the
//! TCP-like flow if there is one (NewReno, and in a second pair of runs CUBIC; both with
//! delayed ACKs, every other packet), every flow with the runtime's default configuration. Figures, all over the measured window (the second half of the run) unless
//! said otherwise:
//! * utilization: the new data (at IP packet size) every flow delivered, over the capacity;
//! * fairness: Jain's index of the UDT flows' throughputs, plain (not normalised by the RTT
//!   differences of the flows, which are within a factor of 3), when there are two or more;
//! * TCP friendliness T (thesis §4.2.4): the TCP-like flow's throughput beside the UDT flows
//!   over the same flow's throughput in a second run of the same scenario with every UDT flow
//!   replaced by a TCP-like one (same RTTs, same seed); once with NewReno, once with CUBIC;
//! * retransmissions per packet lost on the wire, over the whole run: the senders'
//!   retransmissions over the UDT data packets the links dropped (queue overflow and random
//!   loss), every flow; none without a drop. Near 1 is efficient; above 1 counts spurious
//!   retransmissions, below 1 losses not (yet) repaired at the end of the run.

use serde::Serialize;

use super::budget::Plan;
use super::draw::Drawn;
use crate::scenario::{DumbbellRun, FlowDef, QueueChoice};
use udt_sim::flow::CcChoice;
use udt_sim::metrics;

/// What one run of a scenario gave.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunFigures {
    /// Mean throughput of every flow over the measured window, Mb/s (UDT flows first).
    pub flows_mbps: Vec<f64>,
    /// Sum of the flows' throughputs over the capacity.
    pub utilization: f64,
    /// Retransmissions of every flow over the run.
    pub retransmissions: u64,
    /// UDT data packets the links dropped over the run.
    pub data_drops: u64,
    /// Data packets the flows sent over the run, retransmissions included.
    pub data_packets: u64,
    /// Hash of every delivery (hex).
    pub trace_hash: String,
    /// Wall-clock seconds (the only figure that varies between runs of one seed).
    pub wall_s: f64,
}

/// The figures of one scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    /// How it ran.
    pub plan: Plan,
    /// The run with the sweep's controller.
    pub run: RunFigures,
    /// The TCP-only run, when a TCP-like flow takes part.
    pub baseline: Option<RunFigures>,
    /// See the module docs.
    pub utilization: f64,
    /// Jain's index of the UDT flows, when there are two or more.
    pub fairness: Option<f64>,
    /// TCP friendliness, when a TCP-like flow takes part (NewReno).
    pub friendliness: Option<f64>,
    /// The same with CUBIC as the TCP-like flow.
    pub friendliness_cubic: Option<f64>,
    /// The runs with CUBIC as the TCP-like flow: beside the UDT flows, and the TCP-only twin.
    pub cubic: Option<(RunFigures, RunFigures)>,
    /// Retransmissions per UDT data packet dropped, when the links dropped any.
    pub retransmissions_per_loss: Option<f64>,
}

/// The run of `d` under `plan`: the UDT flows with `cc`, the TCP-like flow with `tcp`.
pub fn dumbbell(d: &Drawn, plan: &Plan, cc: CcChoice, tcp: CcChoice) -> DumbbellRun {
    let n_udt = d.udt_rtt_ms.len();
    let rtts = d.rtts();
    let mut r = DumbbellRun::uniform(format!("sweep #{}", d.index), d.bw_bps, rtts[0], 1, cc);
    r.flows = rtts
        .into_iter()
        .enumerate()
        .map(|(i, rtt)| FlowDef {
            cc: if i < n_udt { cc } else { tcp },
            rtt,
            start: std::time::Duration::ZERO,
            stop: None,
        })
        .collect();
    r.queue = QueueChoice::DropTail(d.queue_pkts);
    r.loss = d.forward_loss.model();
    r.reverse_loss = d.reverse_loss.model();
    r.time = plan.time;
    r.warmup = plan.warmup;
    r.sample = plan.sample;
    r.stability_sample = plan.sample;
    r.seed = d.seed;
    r
}

/// The TCP-only twin of `run`: every flow `tcp`.
pub fn baseline(run: &DumbbellRun, tcp: CcChoice) -> DumbbellRun {
    let mut b = run.clone();
    for f in &mut b.flows {
        f.cc = tcp;
    }
    b.label = format!("{} tcp only", run.label);
    b
}

/// Run `r` and read its figures.
pub fn run_figures(r: &DumbbellRun) -> Result<RunFigures, String> {
    let res = r.run()?;
    let trace = res.trace.as_ref().ok_or("the run kept no trace")?;
    Ok(RunFigures {
        flows_mbps: res.flows.iter().map(|f| f.mean_mbps).collect(),
        utilization: res.measures.utilization,
        retransmissions: trace.flows.iter().filter_map(|f| f.progress.last()).map(|p| p.retransmits).sum(),
        data_drops: trace.links.iter().map(|(_, s)| s.data_drops).sum(),
        data_packets: res.data_packets,
        trace_hash: res.trace_hash,
        wall_s: res.wall_s,
    })
}

/// The figures of `d` from its run and, with a TCP-like flow, its TCP-only run (NewReno) and
/// the pair of runs with CUBIC.
pub fn outcome(
    d: &Drawn,
    plan: Plan,
    run: RunFigures,
    baseline: Option<RunFigures>,
    cubic: Option<(RunFigures, RunFigures)>,
) -> Outcome {
    let n_udt = d.udt_rtt_ms.len();
    let udt = &run.flows_mbps[..n_udt.min(run.flows_mbps.len())];
    let fairness = (udt.len() > 1).then(|| metrics::jain(udt));
    let friendliness_of = |beside: &RunFigures, alone: Option<&RunFigures>| {
        let tcp = d.tcp_rtt_ms.and_then(|_| beside.flows_mbps.get(n_udt).copied());
        match (tcp, alone.and_then(|b| b.flows_mbps.get(n_udt).copied())) {
            (Some(t), Some(a)) => metrics::friendliness(&[t], &[a]),
            _ => None,
        }
    };
    let friendliness = friendliness_of(&run, baseline.as_ref());
    let friendliness_cubic = cubic.as_ref().and_then(|(beside, alone)| friendliness_of(beside, Some(alone)));
    let retransmissions_per_loss =
        (run.data_drops > 0).then(|| run.retransmissions as f64 / run.data_drops as f64);
    Outcome {
        plan,
        utilization: run.utilization,
        fairness,
        friendliness,
        friendliness_cubic,
        retransmissions_per_loss,
        run,
        baseline,
        cubic,
    }
}
