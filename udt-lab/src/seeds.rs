//! The seed papers' comparisons, in the simulator: Ren et al. (2008)'s throughput of RBUDP,
//! Tsunami, UDT and TCP against file size, random loss and RTT; He et al. (2002)'s model of
//! RBUDP; Dickens et al. (2003)'s FOBS acknowledgement schemes; and what each blast protocol
//! does to a TCP flow sharing its bottleneck (which the papers mostly leave out).
//!
//! Every experiment is a list of [`Transfer`]s run independently (in parallel with `jobs`).
//! Hand-set rates (RBUDP, Tsunami) are 95% of the path's capacity in payload bits per second,
//! as a user who measured the path would set them; FOBS adapts its rate up to the capacity.
//! "TCP" is the catalog's `bic`, the TCP of Ren et al.'s Linux 2.6.18 testbed, run as a
//! TCP-like UDT flow (window, ACK clock, BiC's growth).

use std::time::Duration;

use serde::Serialize;
use udt_bulk::fobs::AckScheme;

use udt_sim::flow::CcChoice;
use udt_sim::transfer::{self, Contender, Transfer, TransferResult};

/// A payload rate that fills `share` of a path of `bw_bps` with datagrams of `header` bytes
/// of protocol header and 1400 bytes of payload (28 bytes of IP and UDP).
fn payload_rate(bw_bps: u64, share: f64, header: u64) -> u64 {
    (bw_bps as f64 * share * 1400.0 / (1400 + header + 28) as f64) as u64
}

/// The protocols of Ren et al.'s figures on a path of `bw_bps`, FOBS added.
pub fn ren_contenders(bw_bps: u64) -> Vec<Contender> {
    let cc = |s: &str| CcChoice::parse(s).expect("a catalog specification");
    vec![
        Contender::Rbudp { rate_bps: payload_rate(bw_bps, 0.95, 4) },
        Contender::Tsunami { rate_bps: payload_rate(bw_bps, 0.95, 6) },
        Contender::Udt(cc("daimd")),
        Contender::Udt(CcChoice::default_cc()),
        Contender::Udt(cc("bic")),
        Contender::Fobs { max_rate_bps: bw_bps, scheme: AckScheme::SegmentedTcp },
    ]
}

/// The axis an experiment varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Axis {
    /// File size (Ren et al. Fig. 2, "payload size").
    Size,
    /// Random loss (Fig. 4).
    Loss,
    /// Round-trip time (Fig. 5).
    Rtt,
}

/// The path and grid of one experiment.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Bottleneck, bits/s (Ren et al.: 1 Gb/s).
    pub bw_bps: u64,
    /// RTT where it does not vary (Ren et al.: 300 ms).
    pub rtt: Duration,
    /// Loss where it does not vary (Ren et al.: 0.1%).
    pub loss: f64,
    /// File size where it does not vary.
    pub size: u64,
    /// Give up on a transfer after this.
    pub limit: Duration,
    /// Seed.
    pub seed: u64,
    /// Runs in parallel.
    pub jobs: usize,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            bw_bps: 1_000_000_000,
            rtt: Duration::from_millis(300),
            loss: 0.001,
            size: 200_000_000,
            limit: Duration::from_secs(60),
            seed: 1,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// The values of `axis` (full: Ren et al.'s whole range).
pub fn grid(axis: Axis, full: bool) -> Vec<f64> {
    match (axis, full) {
        (Axis::Size, false) => vec![10e6, 50e6, 200e6],
        (Axis::Size, true) => vec![10e6, 100e6, 500e6, 1e9, 2e9],
        (Axis::Loss, false) => vec![0.0, 0.001, 0.01],
        (Axis::Loss, true) => vec![0.0, 0.0001, 0.001, 0.005, 0.01],
        (Axis::Rtt, false) => vec![2.0, 100.0, 600.0],
        (Axis::Rtt, true) => vec![2.0, 10.0, 50.0, 100.0, 300.0, 600.0],
    }
}

/// Ren et al.'s experiment along `axis` over `values`.
pub fn ren(axis: Axis, values: &[f64], setup: &Setup) -> Result<Vec<TransferResult>, String> {
    let mut runs = Vec::new();
    for &v in values {
        for contender in ren_contenders(setup.bw_bps) {
            let mut t = transfer_on(setup, contender);
            match axis {
                Axis::Size => t.size = v as u64,
                Axis::Loss => t.loss = v,
                Axis::Rtt => t.rtt = Duration::from_secs_f64(v / 1e3),
            }
            t.label = match axis {
                Axis::Size => format!("{} MB", v / 1e6),
                Axis::Loss => format!("loss {}%", v * 100.0),
                Axis::Rtt => format!("RTT {v} ms"),
            };
            runs.push(t);
        }
    }
    run_all(runs, setup.jobs)
}

/// A transfer of `setup`'s size on its path by `contender`.
fn transfer_on(setup: &Setup, contender: Contender) -> Transfer {
    Transfer {
        label: String::new(),
        bw_bps: setup.bw_bps,
        rtt: setup.rtt,
        loss: setup.loss,
        reverse_loss: 0.0,
        queue_pkts: None,
        size: setup.size,
        contender,
        competitor: None,
        limit: setup.limit,
        seed: setup.seed,
    }
}

/// One row of the RBUDP model check.
#[derive(Clone, Debug, Serialize)]
pub struct ModelRow {
    /// The simulated transfer.
    pub run: TransferResult,
    /// Its sending rate, bits/s of payload.
    pub send_rate_bps: u64,
    /// Measured B/B_send: file bits over time, over the sending rate.
    pub measured_ratio: f64,
    /// He et al.'s B_best/B_send = 1 / (1 + RTT x B_send / S_total).
    pub model_ratio: f64,
    /// Re-blast rounds measured (blasts after the first).
    pub resend_rounds: u64,
    /// The model's rounds for the loss rate, log_L(S_packet / S_total).
    pub model_rounds: f64,
}

/// He et al.'s model against simulated RBUDP transfers: file sizes x RTTs on a loss-free
/// path at 90% of `bw_bps`, then the resend rounds at `losses`.
pub fn rbudp_model(
    setup: &Setup,
    sizes: &[u64],
    rtts_ms: &[f64],
    losses: &[f64],
) -> Result<Vec<ModelRow>, String> {
    let rate = payload_rate(setup.bw_bps, 0.9, 4);
    let mut runs = Vec::new();
    for &size in sizes {
        for &rtt in rtts_ms {
            let mut t = transfer_on(setup, Contender::Rbudp { rate_bps: rate });
            t.size = size;
            t.loss = 0.0;
            t.rtt = Duration::from_secs_f64(rtt / 1e3);
            t.label = format!("{} MB, RTT {rtt} ms", size as f64 / 1e6);
            runs.push(t);
        }
    }
    for &loss in losses {
        let mut t = transfer_on(setup, Contender::Rbudp { rate_bps: rate });
        t.loss = loss;
        t.label = format!("loss {}%", loss * 100.0);
        runs.push(t);
    }
    let results = run_all(runs.clone(), setup.jobs)?;
    Ok(results
        .into_iter()
        .zip(runs)
        .map(|(run, t)| {
            let measured =
                if run.completed { run.size as f64 * 8.0 / run.seconds / rate as f64 } else { 0.0 };
            let rounds = run.rounds.saturating_sub(1);
            ModelRow {
                send_rate_bps: rate,
                measured_ratio: measured,
                model_ratio: udt_bulk::rbudp::model_best_ratio(t.rtt, rate as f64, t.size),
                resend_rounds: rounds,
                model_rounds: if t.loss > 0.0 {
                    udt_bulk::rbudp::model_rounds(t.loss, 1400, t.size)
                } else {
                    0.0
                },
                run,
            }
        })
        .collect())
}

/// Dickens et al.'s comparison of FOBS' acknowledgement schemes at each loss rate.
pub fn fobs_acks(setup: &Setup, losses: &[f64]) -> Result<Vec<TransferResult>, String> {
    let mut runs = Vec::new();
    for &loss in losses {
        for scheme in [AckScheme::SegmentedTcp, AckScheme::ChunkMapUdp] {
            let mut t = transfer_on(setup, Contender::Fobs { max_rate_bps: setup.bw_bps, scheme });
            t.loss = loss;
            t.reverse_loss = loss;
            t.label = format!("loss {}% both ways", loss * 100.0);
            runs.push(t);
        }
    }
    run_all(runs, setup.jobs)
}

/// Each protocol beside a TCP CUBIC flow on the bottleneck, and CUBIC alone for reference.
pub fn beside_tcp(setup: &Setup) -> Result<Vec<TransferResult>, String> {
    let cubic = CcChoice::parse("cubic").expect("a catalog specification");
    let mut runs = Vec::new();
    for contender in ren_contenders(setup.bw_bps) {
        let mut t = transfer_on(setup, contender);
        t.competitor = Some(cubic);
        t.label = "beside cubic".into();
        runs.push(t);
    }
    // CUBIC alone, over the same kind of transfer: what it gets with the path to itself.
    let mut alone = transfer_on(setup, Contender::Udt(cubic));
    alone.label = "cubic alone".into();
    runs.push(alone);
    run_all(runs, setup.jobs)
}

/// Run transfers, `jobs` at a time, results in order.
pub fn run_all(runs: Vec<Transfer>, jobs: usize) -> Result<Vec<TransferResult>, String> {
    let jobs = jobs.max(1);
    let mut results: Vec<Option<Result<TransferResult, String>>> = vec![None; runs.len()];
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots = std::sync::Mutex::new(&mut results);
    std::thread::scope(|s| {
        for _ in 0..jobs.min(runs.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(t) = runs.get(i) else { break };
                let r = transfer::run(t);
                slots.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
            });
        }
    });
    results.into_iter().map(|r| r.unwrap_or_else(|| Err("not run".into()))).collect()
}
