//! Efficiency scenarios on the single-link network of Fig. 4-1: one flow over a capacity x RTT
//! grid (Fig. 4-2, with RED Fig. 4-14), 1 to 10 parallel flows (Fig. 4-3), the queue size
//! (Fig. 4-12), convergence from zero on an idle link (chapter 3), and free-form runs.

use super::{execute, ms, report, DumbbellRun, Job, Params, QueueChoice};
use crate::report::Report;

pub(super) const FIG4_2: &str = "one UDT flow, capacity x RTT grid, DropTail queue max(BDP, 10): utilization";
pub(super) const FIG4_3: &str =
    "1..10 UDT flows on 1 Gb/s at RTT 1, 10, 100 ms: efficiency, fairness, stability";
pub(super) const FIG4_12: &str = "one UDT flow, utilization against the DropTail queue size";
pub(super) const FIG4_14: &str = "Fig. 4-2 with a RED queue (NS-2 automatic parameters)";
pub(super) const CONVERGENCE: &str = "one UDT flow from zero on an idle 1 Gb/s link: time to 90% of capacity";
pub(super) const CUSTOM: &str = "free-form dumbbell: bw, rtt, loss, queue, flows, time, cc, seed";

/// Mb/s as bits/s.
pub(super) fn mbps(v: f64) -> u64 {
    (v * 1e6).round() as u64
}

/// Format a number without trailing zeros.
pub(super) fn num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A job running `r`.
pub(super) fn job(r: DumbbellRun) -> Job {
    Box::new(move || r.run())
}

/// Capture the first run's bottleneck when asked.
pub(super) fn capture_first(runs: &mut [DumbbellRun], p: &Params) {
    if let (Some(path), Some(first)) = (&p.pcap, runs.first_mut()) {
        first.pcap = Some(path.clone());
    }
}

fn single_flow_grid(p: &Params, name: &str, about: &str, red: bool) -> Result<Report, String> {
    let bws = p.grid(p.bw_mbps, &[10.0, 100.0, 1000.0], &[10.0, 100.0, 1000.0, 10_000.0]);
    let rtts = p.grid(p.rtt_ms, &[1.0, 10.0, 100.0], &[1.0, 10.0, 100.0, 1000.0]);
    let time = p.time(40.0, 100.0);
    let warmup = p.warmup(time, 0.3);
    let cc = p.cc.unwrap_or_default();
    let mut runs = Vec::new();
    for &bw in &bws {
        for &rtt in &rtts {
            let mut r = DumbbellRun::uniform(
                format!("{}Mb/s {}ms", num(bw), num(rtt)),
                mbps(bw),
                ms(rtt),
                p.flows.unwrap_or(1),
                cc,
            )
            .with_params(p);
            if red {
                r.queue = QueueChoice::Red(r.queue.packets());
            }
            r.time = time;
            r.warmup = warmup;
            r.thesis = Some("> 94%".into());
            runs.push(r);
        }
    }
    capture_first(&mut runs, p);
    let mut rep = report(name, about, "every run above 94% utilization (NS-2, 100 s runs)", p);
    rep.runs = execute(runs.into_iter().map(job).collect(), p.jobs)?;
    rep.notes.push(format!(
        "utilization = mean throughput (IP packets of new data) over [{:.0}, {:.0}] s / capacity",
        warmup.as_secs_f64(),
        time.as_secs_f64()
    ));
    Ok(rep)
}

/// Fig. 4-2.
pub(super) fn fig4_2(p: &Params) -> Result<Report, String> {
    single_flow_grid(p, "fig4-2", FIG4_2, false)
}

/// Fig. 4-14.
pub(super) fn fig4_14(p: &Params) -> Result<Report, String> {
    let mut rep = single_flow_grid(p, "fig4-14", FIG4_14, true)?;
    rep.thesis = "throughputs similar to DropTail (Fig. 4-2), slightly lower".into();
    for r in &mut rep.runs {
        r.thesis = Some("~ Fig. 4-2".into());
    }
    Ok(rep)
}

/// Fig. 4-3.
pub(super) fn fig4_3(p: &Params) -> Result<Report, String> {
    let ns = p.grid(p.flows, &[1, 2, 5, 10], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    let rtts = p.grid(p.rtt_ms, &[1.0, 10.0, 100.0], &[1.0, 10.0, 100.0]);
    let bw = p.bw_mbps.unwrap_or(1000.0);
    let time = p.time(30.0, 100.0);
    let warmup = p.warmup(time, 0.3);
    let cc = p.cc.unwrap_or_default();
    let mut runs = Vec::new();
    for &rtt in &rtts {
        for &n in &ns {
            let mut r = DumbbellRun::uniform(format!("{}ms n={n}", num(rtt)), mbps(bw), ms(rtt), n, cc)
                .with_params(p);
            r.time = time;
            r.warmup = warmup;
            r.thesis = Some("F > 0.9".into());
            runs.push(r);
        }
    }
    capture_first(&mut runs, p);
    let mut rep =
        report("fig4-3", FIG4_3, "high efficiency (a little above one flow's), F > 0.9 in every run", p);
    rep.runs = execute(runs.into_iter().map(job).collect(), p.jobs)?;
    rep.notes.push(format!("measured over [{:.0}, {:.0}] s", warmup.as_secs_f64(), time.as_secs_f64()));
    Ok(rep)
}

/// Fig. 4-12.
pub(super) fn fig4_12(p: &Params) -> Result<Report, String> {
    let bws = p.grid(p.bw_mbps, &[1000.0], &[10.0, 1000.0]);
    let rtts = p.grid(p.rtt_ms, &[100.0], &[0.1, 1.0, 10.0, 100.0]);
    let queues = p.grid(p.queue_pkts, &[10, 100, 1000], &[10, 100, 1000, 10_000]);
    let time = p.time(40.0, 100.0);
    let warmup = p.warmup(time, 0.3);
    let cc = p.cc.unwrap_or_default();
    let mut runs = Vec::new();
    for &bw in &bws {
        for &rtt in &rtts {
            for &q in &queues {
                let mut r = DumbbellRun::uniform(
                    format!("{}Mb/s {}ms q={q}", num(bw), num(rtt)),
                    mbps(bw),
                    ms(rtt),
                    1,
                    cc,
                )
                .with_params(p);
                r.queue = QueueChoice::DropTail(q);
                r.time = time;
                r.warmup = warmup;
                if bw == 1000.0 && rtt == 100.0 {
                    r.thesis = match q {
                        10 => Some("75%".into()),
                        1000 => Some("99%".into()),
                        _ => None,
                    };
                }
                runs.push(r);
            }
        }
    }
    capture_first(&mut runs, p);
    let mut rep =
        report("fig4-12", FIG4_12, "1 Gb/s, 100 ms: 75% with a 10-packet queue, 99% with 1000 (BDP 8333)", p);
    rep.runs = execute(runs.into_iter().map(job).collect(), p.jobs)?;
    Ok(rep)
}

/// Chapter 3: convergence from zero.
pub(super) fn convergence(p: &Params) -> Result<Report, String> {
    let rtts = p.grid(p.rtt_ms, &[1.0, 10.0, 100.0], &[1.0, 10.0, 100.0, 1000.0]);
    let bw = p.bw_mbps.unwrap_or(1000.0);
    let time = p.time(30.0, 60.0);
    let cc = p.cc.unwrap_or_default();
    let mut runs = Vec::new();
    for &rtt in &rtts {
        let mut r = DumbbellRun::uniform(format!("{}Mb/s {}ms", num(bw), num(rtt)), mbps(bw), ms(rtt), 1, cc)
            .with_params(p);
        r.time = time;
        r.warmup = p.warmup(time, 0.3);
        r.thesis = Some("~7.5 s + slow start".into());
        runs.push(r);
    }
    capture_first(&mut runs, p);
    let mut rep = report(
        "convergence",
        CONVERGENCE,
        "0 to 90% of capacity in about 750 SYN (7.5 s) whatever the capacity, after slow start",
        p,
    );
    rep.runs = execute(runs.into_iter().map(job).collect(), p.jobs)?;
    rep.notes.push(
        "conv s: from the start until the flow's throughput reaches 90% of capacity and holds it for 1 s"
            .into(),
    );
    Ok(rep)
}

/// Free-form.
pub(super) fn custom(p: &Params) -> Result<Report, String> {
    let bw = p.bw_mbps.unwrap_or(100.0);
    let rtt = p.rtt_ms.unwrap_or(10.0);
    let n = p.flows.unwrap_or(1).max(1);
    let cc = p.cc.unwrap_or_default();
    let time = p.time(30.0, 100.0);
    let mut r =
        DumbbellRun::uniform(format!("{}Mb/s {}ms n={n}", num(bw), num(rtt)), mbps(bw), ms(rtt), n, cc)
            .with_params(p);
    r.time = time;
    r.warmup = p.warmup(time, 0.3);
    r.pcap = p.pcap.clone();
    let mut rep = report("custom", CUSTOM, "-", p);
    rep.runs = execute(vec![job(r)], 1)?;
    Ok(rep)
}
