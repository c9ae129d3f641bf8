//! Link errors (Fig. 4-15, 4-16): one flow on 100 Mb/s at RTT 1, 10, 100 ms with random
//! non-congestion loss, UDT (the default controller) and TCP (NewReno), then the thesis'
//! algorithm with the noisy-link option of thesis §3.5.2 (`daimd:noisy=true`).

use super::efficiency::{capture_first, job, mbps, num};
use super::{execute, ms, report, DumbbellRun, Params};
use crate::report::Report;
use udt_sim::flow::CcChoice;
use udt_sim::link::{GilbertElliott, LossModel};

pub(super) const FIG4_15: &str = "one UDT and one TCP flow, 100 Mb/s, RTT 1/10/100 ms, random link loss";
/// The thesis' algorithm with its noisy-link option: what Fig. 4-16 is about, so the scenario's
/// own default rather than the catalog's.
const NOISY: &str = "daimd:noisy=true";

pub(super) const FIG4_16: &str =
    "one UDT flow with the noisy-link option, 100 Mb/s, RTT 1/10/100 ms, random link loss";

fn grid(
    p: &Params,
    name: &str,
    about: &str,
    thesis: &str,
    ccs: &[CcChoice],
    mark: Option<f64>,
) -> Result<Report, String> {
    let rtts = p.grid(p.rtt_ms, &[1.0, 10.0, 100.0], &[1.0, 10.0, 100.0]);
    let losses = p.grid(p.loss, &[0.001, 0.01], &[0.0001, 0.001, 0.01, 0.1]);
    let bw = p.bw_mbps.unwrap_or(100.0);
    let time = p.time(30.0, 100.0);
    let ccs: Vec<CcChoice> = match p.cc {
        Some(c) => vec![c],
        None => ccs.to_vec(),
    };
    let mut runs = Vec::new();
    for &rtt in &rtts {
        for &loss in &losses {
            for &cc in &ccs {
                let label = format!("{}ms loss {}% {}", num(rtt), num(loss * 100.0), cc.label());
                let mut r =
                    DumbbellRun::uniform(label, mbps(bw), ms(rtt), p.flows.unwrap_or(1), cc).with_params(p);
                r.loss = match p.burst {
                    Some(b) => LossModel::GilbertElliott(GilbertElliott::from_rate_and_burst(loss, b)),
                    None => LossModel::Bernoulli(loss),
                };
                r.time = time;
                r.warmup = p.warmup(time, 0.3);
                if mark == Some(loss) && !cc.is_tcp() {
                    r.thesis = Some("> 80%".into());
                }
                runs.push(r);
            }
        }
    }
    capture_first(&mut runs, p);
    let mut rep = report(name, about, thesis, p);
    rep.runs = execute(runs.into_iter().map(job).collect(), p.jobs)?;
    rep.notes.push(
        "loss is per packet on the bottleneck's data direction (the thesis' x axis is a bit error rate)"
            .into(),
    );
    Ok(rep)
}

/// Fig. 4-15.
pub(super) fn fig4_15(p: &Params) -> Result<Report, String> {
    grid(
        p,
        "fig4-15",
        FIG4_15,
        "UDT's utilization falls with the loss rate but little with RTT; TCP's falls steeply at high RTT",
        &[CcChoice::default_cc(), CcChoice::newreno()],
        None,
    )
}

/// Fig. 4-16.
pub(super) fn fig4_16(p: &Params) -> Result<Report, String> {
    grid(
        p,
        "fig4-16",
        FIG4_16,
        "with the noisy-link algorithm every flow stays above 80% utilization even at 1% loss",
        &[CcChoice::parse(NOISY).expect("a catalog specification")],
        Some(0.01),
    )
}
