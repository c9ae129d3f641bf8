//! The similarity study of thesis §5.4.1 (Table 5-2): N = 1..64 parallel TCP flows written on
//! Composable UDT (CTCP, here the catalog's NewReno) sharing 1 Gb/s with a 110 ms RTT, reporting
//! aggregate throughput, fairness and stability next to the thesis' kernel TCP and CTCP.
//!
//! The thesis ran real machines between Chicago and Amsterdam for 60 minutes per row; its path's
//! queue is unknown. We use the dumbbell default, a DropTail queue of one BDP, and report the
//! measures over the second half of the run. Any `--cc` replaces NewReno (e.g. `--cc cubic`).

use super::efficiency::{capture_first, job, mbps, num};
use super::{execute, ms, report, DumbbellRun, Params};
use crate::report::Report;
use udt_sim::flow::CcChoice;

pub(super) const TABLE5_2: &str =
    "N = 1..64 parallel NewReno (CTCP) flows on 1 Gb/s, 110 ms: throughput, fairness, stability";

/// Table 5-2 of the thesis: (flows, TCP Mb/s, CTCP Mb/s, TCP fairness, CTCP fairness, TCP
/// stability, CTCP stability).
const TABLE_5_2: [(usize, u32, u32, f64, f64, f64, f64); 7] = [
    (1, 112, 122, 1.0, 1.0, 0.517, 0.415),
    (2, 191, 208, 0.997, 0.999, 0.476, 0.426),
    (4, 322, 323, 0.949, 0.999, 0.484, 0.492),
    (8, 378, 422, 0.971, 0.999, 0.633, 0.550),
    (16, 672, 642, 0.958, 0.985, 0.502, 0.482),
    (32, 877, 799, 0.988, 0.997, 0.491, 0.470),
    (64, 921, 716, 0.994, 0.996, 0.569, 0.529),
];

/// Table 5-2.
pub(super) fn table5_2(p: &Params) -> Result<Report, String> {
    let ns = p.grid(p.flows, &[1, 2, 4, 8], &[1, 2, 4, 8, 16, 32, 64]);
    let bw = p.bw_mbps.unwrap_or(1000.0);
    let rtt = p.rtt_ms.unwrap_or(110.0);
    let time = p.time(60.0, 300.0);
    let cc = p.cc.unwrap_or_else(CcChoice::newreno);
    let mut runs = Vec::new();
    for &n in &ns {
        let mut r =
            DumbbellRun::uniform(format!("{}Mb/s {}ms N={n}", num(bw), num(rtt)), mbps(bw), ms(rtt), n, cc)
                .with_params(p);
        r.time = time;
        r.warmup = p.warmup(time, 0.5);
        r.thesis = TABLE_5_2.iter().find(|row| row.0 == n).map(|row| {
            format!("TCP {} / CTCP {} Mb/s, F {} / {}, S {} / {}", row.1, row.2, row.3, row.4, row.5, row.6)
        });
        runs.push(r);
    }
    capture_first(&mut runs, p);
    let mut rep = report(
        "table5-2",
        TABLE5_2,
        "Table 5-2: CTCP within ~10% of kernel TCP up to 16 flows, F >= 0.985, S ~0.5",
        p,
    );
    rep.runs = execute(runs.into_iter().map(job).collect(), p.jobs)?;
    rep.notes.push(
        "thesis: real 1 Gb/s Chicago-Amsterdam path (queue unknown, 60 min per row); here a one-BDP \
         DropTail queue, measured over the second half of the run"
            .into(),
    );
    Ok(rep)
}
