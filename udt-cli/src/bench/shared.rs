//! Shared runs: two flows started together on one path, to see how they split the link.
//! Two UDT flows measure fairness (Jain's index of the two goodputs); UDT with kernel TCP
//! CUBIC measures friendliness (each flow's share).
//!
//! Invariant: both servers are up before either client starts, and both clients start within
//! a few milliseconds of each other; each flow is measured by its own receiver.

use anyhow::Result;
use serde::Serialize;

use super::flow::{Ctx, Flow, Started};
use super::interrupt;
use super::system::System;

/// One flow of a shared run.
#[derive(Clone, Debug, Serialize)]
pub struct SharedFlow {
    /// Its system.
    pub system: String,
    /// Its share of the sum of the goodputs.
    pub share: f64,
    /// Its measurement.
    pub flow: Flow,
}

/// The result of a shared run.
#[derive(Clone, Debug, Serialize)]
pub struct SharedRun {
    /// What ran: `udt + udt`, `udt + tcp-cubic`.
    pub name: String,
    /// The path, as a heading.
    pub path: String,
    /// The path's bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// The flows (empty when the run failed).
    pub flows: Vec<SharedFlow>,
    /// Sum of the goodputs over the link rate.
    pub goodput_share: Option<f64>,
    /// Sum of the flows' utilizations (IP packets of new data over the link rate).
    pub utilization: Option<f64>,
    /// Jain's fairness index of the goodputs (1 = equal).
    pub jain: Option<f64>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Jain's index: (sum x)^2 / (n sum x^2); 1 when all equal, 1/n when one takes everything.
pub fn jain(xs: &[f64]) -> Option<f64> {
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    (sq > 0.0).then(|| sum * sum / (xs.len() as f64 * sq))
}

/// Runs `systems` at once on the context's path.
pub fn run(ctx: &Ctx, systems: &[System]) -> SharedRun {
    let name = systems.iter().map(ToString::to_string).collect::<Vec<_>>().join(" + ");
    let path = ctx.path.label();
    let rate_bps = ctx.path.rate_bps;
    match run_flows(ctx, systems) {
        Ok(flows) => {
            let goodputs: Vec<f64> = flows.iter().map(|f| f.goodput_mbps).collect();
            let sum: f64 = goodputs.iter().sum();
            let utilization = flows.iter().map(|f| f.utilization).sum();
            let flows = systems
                .iter()
                .zip(flows)
                .map(|(s, flow)| SharedFlow {
                    system: s.to_string(),
                    share: if sum > 0.0 { flow.goodput_mbps / sum } else { 0.0 },
                    flow,
                })
                .collect();
            SharedRun {
                name,
                path,
                rate_bps,
                flows,
                goodput_share: Some(sum * 1e6 / rate_bps.max(1) as f64),
                utilization: Some(utilization),
                jain: jain(&goodputs),
                error: None,
            }
        }
        Err(e) => SharedRun {
            name,
            path,
            rate_bps,
            flows: Vec::new(),
            goodput_share: None,
            utilization: None,
            jain: None,
            error: Some(format!("{e:#}")),
        },
    }
}

fn run_flows(ctx: &Ctx, systems: &[System]) -> Result<Vec<Flow>> {
    let mut started = Vec::with_capacity(systems.len());
    for (slot, system) in (0u16..).zip(systems) {
        started.push(Started::start_server(ctx, system, slot)?);
    }
    interrupt::sleep(std::time::Duration::from_millis(400))?;
    for s in &mut started {
        s.start_client(ctx)?;
    }
    // Finishing in order is fine: each waits on its own deadline, counted from its start.
    started.into_iter().map(|s| s.finish(ctx)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[5.0, 5.0]), Some(1.0));
        assert_eq!(jain(&[10.0, 0.0]), Some(0.5));
        assert_eq!(jain(&[0.0, 0.0]), None);
    }
}
