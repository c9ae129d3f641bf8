//! Fairness and stability scenarios: flows starting 5 s apart (Fig. 4-4), seven flows with RTTs
//! from 1 us to 1 s (Fig. 4-5/4-6), and the stability index of UDT and TCP (Fig. 4-7).

use std::time::Duration;

use super::efficiency::{capture_first, job, mbps, num};
use super::{execute, ms, report, DumbbellRun, FlowDef, Params, QueueChoice};
use crate::report::Report;
use udt_sim::flow::CcChoice;
use udt_sim::link::bdp_packets;

pub(super) const FIG4_4: &str =
    "10 UDT flows started 5 s apart on 100 Mb/s/1 ms and 1 Gb/s/100 ms: fairness after 50 s";
pub(super) const FIG4_6: &str = "7 UDT flows with RTT 0.001..1000 ms sharing 100 Mb/s: RTT independence";
pub(super) const FIG4_7: &str =
    "stability index of 10 UDT and of 10 TCP flows on 100 Mb/s, RTT 0.01 ms..1 s, 1 s samples";

/// Fig. 4-4.
pub(super) fn fig4_4(p: &Params) -> Result<Report, String> {
    let configs: Vec<(f64, f64)> = match (p.bw_mbps, p.rtt_ms) {
        (None, None) => vec![(100.0, 1.0), (1000.0, 100.0)],
        (bw, rtt) => vec![(bw.unwrap_or(100.0), rtt.unwrap_or(1.0))],
    };
    let n = p.flows.unwrap_or(10);
    let time = p.time(80.0, 100.0);
    let from = p.warmup_s.map_or(Duration::from_secs(50), super::secs).min(time);
    let cc = p.cc.unwrap_or_default();
    let mut runs = Vec::new();
    for (bw, rtt) in configs {
        let mut r = DumbbellRun::uniform(format!("{}Mb/s {}ms", num(bw), num(rtt)), mbps(bw), ms(rtt), n, cc)
            .with_params(p);
        for (i, f) in r.flows.iter_mut().enumerate() {
            f.start = Duration::from_secs(5 * i as u64);
        }
        r.time = time;
        r.warmup = from;
        r.thesis = Some("F > 0.999".into());
        runs.push(r);
    }
    capture_first(&mut runs, p);
    let mut rep = report("fig4-4", FIG4_4, "fairness index after 50 s greater than 0.999 in both", p);
    rep.runs = execute(runs.into_iter().map(job).collect(), p.jobs)?;
    rep.notes.push(format!(
        "flow i starts at 5 i s; measures over [{:.0}, {:.0}] s; conv s = slowest flow to reach and hold 90% of its fair share",
        from.as_secs_f64(),
        time.as_secs_f64()
    ));
    Ok(rep)
}

/// The RTTs of Fig. 4-5, ms.
const RTTS_4_5: [f64; 7] = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0];

/// Fig. 4-6.
pub(super) fn fig4_6(p: &Params) -> Result<Report, String> {
    let bw = p.bw_mbps.unwrap_or(100.0);
    let time = p.time(60.0, 200.0);
    let cc = p.cc.unwrap_or_default();
    let mut r = DumbbellRun::uniform(format!("{}Mb/s 7 RTTs", num(bw)), mbps(bw), ms(1.0), 7, cc);
    r.flows =
        RTTS_4_5.iter().map(|&rtt| FlowDef { cc, rtt: ms(rtt), start: Duration::ZERO, stop: None }).collect();
    // The thesis does not say which RTT its max(BDP, 10) queue refers to; 10 ms gives 83 packets.
    r.queue = QueueChoice::DropTail(bdp_packets(mbps(bw), ms(10.0), 1500).max(10));
    let mut r = r.with_params(p);
    r.time = time;
    r.warmup = p.warmup(time, 0.3);
    r.thesis = Some("F = 0.978".into());
    let mut runs = vec![r];
    capture_first(&mut runs, p);
    let mut rep = report("fig4-6", FIG4_6, "similar throughputs, fairness index 0.978", p);
    rep.runs = execute(runs.into_iter().map(job).collect(), p.jobs)?;
    rep.notes
        .push("each sender's access link carries half its RTT each way; the bottleneck has no delay".into());
    rep.notes.push(
        "queue: max(BDP at 10 ms, 10) = 83 packets at 100 Mb/s (the thesis does not say which RTT)".into(),
    );
    Ok(rep)
}

/// Fig. 4-7.
pub(super) fn fig4_7(p: &Params) -> Result<Report, String> {
    let rtts = p.grid(p.rtt_ms, &[1.0, 10.0, 100.0], &[0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]);
    let ccs = match p.cc {
        Some(c) => vec![c],
        None => vec![CcChoice::default_cc(), CcChoice::newreno()],
    };
    let bw = p.bw_mbps.unwrap_or(100.0);
    let n = p.flows.unwrap_or(10);
    let time = p.time(40.0, 100.0);
    let mut runs = Vec::new();
    for &rtt in &rtts {
        for &cc in &ccs {
            let mut r =
                DumbbellRun::uniform(format!("{}ms {}", num(rtt), cc.label()), mbps(bw), ms(rtt), n, cc)
                    .with_params(p);
            r.time = time;
            r.warmup = p.warmup(time, 0.2);
            r.stability_sample = Duration::from_secs(1);
            runs.push(r);
        }
    }
    capture_first(&mut runs, p);
    let mut rep = report("fig4-7", FIG4_7, "UDT's stability index below TCP's except at RTT 1-10 ms", p);
    rep.runs = execute(runs.into_iter().map(job).collect(), p.jobs)?;
    Ok(rep)
}
