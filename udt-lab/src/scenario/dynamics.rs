//! Dynamic and multi-bottleneck scenarios: one UDT flow against a CBR flow whose rate jumps
//! (Fig. 4-8), and two flows over two bottlenecks (Fig. 4-9, Table 4-1).

use std::time::Duration;

use super::efficiency::{capture_first, job, mbps, num};
use super::{execute, ms, report, run_result, DumbbellRun, Params};
use crate::report::{Report, RunParams};
use udt_sim::flow::FlowSpec;
use udt_sim::link::QueueConfig;
use udt_sim::run::{run, Window};
use udt_sim::topology::shapes::{thesis_link, two_bottlenecks};

pub(super) const FIG4_8: &str = "one UDT flow and a CBR UDP flow whose rate jumps, 100 Mb/s, 10 ms";
pub(super) const FIG4_9: &str = "flows A-B and A-C share A's 200 Mb/s link; C sits behind x Mb/s (Table 4-1)";

/// The CBR schedule of Fig. 4-8 (the thesis shows a plot, not the numbers): (s, Mb/s).
const CBR_STEPS: [(u64, f64); 10] = [
    (0, 0.0),
    (10, 50.0),
    (20, 20.0),
    (30, 80.0),
    (40, 10.0),
    (50, 60.0),
    (60, 0.0),
    (70, 90.0),
    (80, 30.0),
    (90, 0.0),
];

/// Fig. 4-8.
pub(super) fn fig4_8(p: &Params) -> Result<Report, String> {
    let bw = p.bw_mbps.unwrap_or(100.0);
    let rtt = p.rtt_ms.unwrap_or(10.0);
    let time = p.time(60.0, 100.0);
    let cc = p.cc.unwrap_or_default();
    let mut r = DumbbellRun::uniform(format!("{}Mb/s {}ms", num(bw), num(rtt)), mbps(bw), ms(rtt), 1, cc)
        .with_params(p);
    let scale = bw / 100.0;
    r.cbr = Some(CBR_STEPS.iter().map(|&(t, m)| (Duration::from_secs(t), mbps(m * scale))).collect());
    r.time = time;
    r.warmup = p.warmup(time, 0.0);
    r.thesis = Some("tracks the CBR changes".into());
    let mut runs = vec![r];
    capture_first(&mut runs, p);
    let mut rep =
        report("fig4-8", FIG4_8, "the UDT flow responds rapidly to every change of the background flow", p);
    rep.runs = execute(runs.into_iter().map(job).collect(), p.jobs)?;
    if let Some(trace) = rep.runs.first().and_then(|r| r.trace.as_ref()) {
        let mut phases = Vec::new();
        for (i, &(t, m)) in CBR_STEPS.iter().enumerate() {
            let end = CBR_STEPS.get(i + 1).map_or(time, |&(e, _)| Duration::from_secs(e)).min(time);
            let start = Duration::from_secs(t);
            if start >= time {
                break;
            }
            // Leave the first 2 s of each phase out: that is the response time.
            let s = trace.samples((start + Duration::from_secs(2)).min(end), end);
            phases.push(format!(
                "{t}-{}s cbr {:.0} udt {:.1} (free {:.0})",
                end.as_secs(),
                trace.mean_mbps(1, s.clone()),
                trace.mean_mbps(0, s),
                bw - m * scale
            ));
        }
        rep.notes.push(format!("per phase, Mb/s, 2 s after each change: {}", phases.join("; ")));
        rep.notes.push("the CBR schedule is ours: the thesis shows the plot, not the rates".into());
    }
    Ok(rep)
}

/// Table 4-1: x, AB, AC.
const TABLE_4_1: [(f64, f64, f64); 12] = [
    (0.1, 198.5, 0.098),
    (1.0, 189.2, 0.979),
    (10.0, 180.1, 9.955),
    (20.0, 170.9, 19.88),
    (40.0, 152.6, 39.24),
    (60.0, 139.7, 52.56),
    (80.0, 137.7, 53.22),
    (100.0, 105.4, 91.62),
    (120.0, 100.8, 98.47),
    (140.0, 101.3, 98.20),
    (160.0, 100.5, 98.85),
    (180.0, 100.3, 99.01),
];

/// Fig. 4-9 / Table 4-1.
pub(super) fn fig4_9(p: &Params) -> Result<Report, String> {
    let xs = p.grid(p.bw_mbps, &TABLE_4_1.map(|r| r.0), &TABLE_4_1.map(|r| r.0));
    let time = p.time(40.0, 100.0);
    let warmup = p.warmup(time, 0.3);
    let cc = p.cc.unwrap_or_default();
    let seed = p.seed;
    let sample = p.sample(0.1);
    let mut jobs: Vec<super::Job> = Vec::new();
    for &x in &xs {
        let thesis = TABLE_4_1.iter().find(|r| r.0 == x).map(|r| format!("AB {} AC {}", r.1, r.2));
        jobs.push(Box::new(move || {
            let rtt = ms(20.0);
            let one_way = ms(5.0);
            let shared = thesis_link(mbps(200.0), one_way, rtt);
            let to_c = thesis_link(mbps(x), one_way, rtt);
            let mut t = two_bottlenecks(shared, shared, to_c);
            let q = match shared.queue {
                QueueConfig::DropTailPackets(q) => q,
                _ => 10,
            };
            t.topo.flow(FlowSpec::udt("AB", t.a, t.b, cc));
            t.topo.flow(FlowSpec::udt("AC", t.a, t.c, cc));
            let mut net = t.topo.build(seed)?;
            let trace = run(&mut net, time, sample);
            let window = Window {
                from: warmup,
                to: time,
                capacity_bps: 200e6,
                stability_interval: Duration::from_secs(1),
                hold: Duration::from_secs(1),
            };
            let params = RunParams {
                bw_mbps: x,
                rtt_ms: vec![20.0, 20.0],
                queue: "droptail".into(),
                queue_pkts: q,
                flows: 2,
                cc: cc.label(),
                time_s: time.as_secs_f64(),
                warmup_s: warmup.as_secs_f64(),
                sample_s: sample.as_secs_f64(),
                seed,
                ..RunParams::default()
            };
            let mut r = run_result(&format!("x={}", num(x)), params, trace, &window, &[0, 1], thesis);
            let (ab, ac) = (r.flows[0].mean_mbps, r.flows[1].mean_mbps);
            r.label = format!("x={} AB {:.1} AC {:.2}", num(x), ab, ac);
            Ok(r)
        }));
    }
    let mut rep =
        report("fig4-9", FIG4_9, "Table 4-1; worst case x = 80: A-C gets 53.22 of its 80 Mb/s fair share", p);
    rep.runs = execute(jobs, p.jobs)?;
    rep.notes.push(
        "every link 5 ms one way (RTT 20 ms), DropTail max(BDP, 10); the thesis gives no delays".into(),
    );
    rep.notes.push(
        "E and util% are over A's 200 Mb/s link; max-min shares: AC = min(x, 100), AB = 200 - AC".into(),
    );
    Ok(rep)
}
