//! TCP friendliness: m UDT and n TCP-like flows together against m + n TCP-like flows alone on
//! the same network (Fig. 4-11 over capacity and RTT, Fig. 4-13 over queue size and
//! discipline). The index is the mean TCP throughput beside UDT over the mean alone.

use super::efficiency::{job, mbps, num};
use super::{execute, ms, report, DumbbellRun, Job, Params, QueueChoice};
use crate::report::{Report, RunResult};
use udt_sim::flow::CcChoice;
use udt_sim::metrics;

pub(super) const FIG4_11: &str =
    "10 UDT + 10 TCP flows against 20 TCP flows, capacity 0.1..1000 Mb/s x RTT 0.01..100 ms";
pub(super) const FIG4_13: &str = "TCP friendliness against the queue size, DropTail and RED, 100 Mb/s, 10 ms";

/// The mixed run and the TCP-only run of one point.
fn pair(mut mixed: DumbbellRun, half: usize, udt: CcChoice, tcp: CcChoice) -> (DumbbellRun, DumbbellRun) {
    let mut alone = mixed.clone();
    for (i, f) in mixed.flows.iter_mut().enumerate() {
        f.cc = if i < half { udt } else { tcp };
    }
    for f in &mut alone.flows {
        f.cc = tcp;
    }
    alone.label = format!("{} tcp only", alone.label);
    mixed.label = format!("{} {}+{}", mixed.label, udt.label(), tcp.label());
    (mixed, alone)
}

/// Run the pairs; set each mixed run's friendliness.
fn run_pairs(
    pairs: Vec<(DumbbellRun, DumbbellRun)>,
    half: usize,
    jobs: usize,
) -> Result<Vec<RunResult>, String> {
    let list: Vec<Job> = pairs.into_iter().flat_map(|(a, b)| [job(a), job(b)]).collect();
    let mut results = execute(list, jobs)?;
    for k in (0..results.len()).step_by(2) {
        let alone: Vec<f64> = results[k + 1].flows.iter().map(|f| f.mean_mbps).collect();
        let beside: Vec<f64> = results[k].flows.iter().skip(half).map(|f| f.mean_mbps).collect();
        results[k].measures.friendliness = metrics::friendliness(&beside, &alone);
    }
    Ok(results)
}

/// Fig. 4-11.
pub(super) fn fig4_11(p: &Params) -> Result<Report, String> {
    let bws = p.grid(p.bw_mbps, &[10.0, 100.0], &[0.1, 1.0, 10.0, 100.0, 1000.0]);
    let rtts = p.grid(p.rtt_ms, &[1.0, 10.0, 100.0], &[0.01, 0.1, 1.0, 10.0, 100.0]);
    let n = p.flows.unwrap_or(20).max(2);
    let half = n / 2;
    let udt = p.cc.filter(|c| !c.is_tcp()).unwrap_or_default();
    let tcp = p.cc.filter(|c| c.is_tcp()).unwrap_or_else(CcChoice::newreno);
    let time = p.time(30.0, 100.0);
    let mut pairs = Vec::new();
    for &bw in &bws {
        for &rtt in &rtts {
            let mut r =
                DumbbellRun::uniform(format!("{}Mb/s {}ms", num(bw), num(rtt)), mbps(bw), ms(rtt), n, udt)
                    .with_params(p);
            r.time = time;
            r.warmup = p.warmup(time, 0.3);
            pairs.push(pair(r, half, udt, tcp));
        }
    }
    let mut rep = report(
        "fig4-11",
        FIG4_11,
        "T > 1 (TCP gets more) at low BDP; UDT takes more as BDP grows; at 1 Gb/s, 100 ms UDT gets ~5x TCP",
        p,
    );
    rep.runs = run_pairs(pairs, half, p.jobs)?;
    rep.notes.push(format!(
        "{half} UDT + {} TCP-like (NewReno, ACK every 2 packets) against {n} TCP-like alone",
        n - half
    ));
    Ok(rep)
}

/// Fig. 4-13.
pub(super) fn fig4_13(p: &Params) -> Result<Report, String> {
    let queues = p.grid(p.queue_pkts, &[20, 83, 300], &[10, 20, 50, 83, 150, 300, 600, 1000]);
    let bw = p.bw_mbps.unwrap_or(100.0);
    let rtt = p.rtt_ms.unwrap_or(10.0);
    let n = p.flows.unwrap_or(10).max(2);
    let half = n / 2;
    let udt = p.cc.filter(|c| !c.is_tcp()).unwrap_or_default();
    let tcp = p.cc.filter(|c| c.is_tcp()).unwrap_or_else(CcChoice::newreno);
    let time = p.time(30.0, 100.0);
    let mut pairs = Vec::new();
    for red in [false, true] {
        for &q in &queues {
            let kind = if red { "red" } else { "droptail" };
            let mut r =
                DumbbellRun::uniform(format!("{kind} q={q}"), mbps(bw), ms(rtt), n, udt).with_params(p);
            r.queue = if red { QueueChoice::Red(q) } else { QueueChoice::DropTail(q) };
            r.time = time;
            r.warmup = p.warmup(time, 0.3);
            pairs.push(pair(r, half, udt, tcp));
        }
    }
    let mut rep = report(
        "fig4-13",
        FIG4_13,
        "TCP does best at queue = BDP (83); beyond it DropTail friendliness falls, RED stays flat",
        p,
    );
    rep.runs = run_pairs(pairs, half, p.jobs)?;
    rep.notes.push(format!(
        "{half} UDT + {} TCP-like against {n} TCP-like alone (the thesis does not give the count)",
        n - half
    ));
    Ok(rep)
}
