//! One run on a dumbbell (Fig. 4-1 / 4-5): n flows through one bottleneck, each with its own
//! RTT, start and stop, optionally a background CBR flow; measured over a window.
//!
//! When all flows have the same RTT the whole propagation delay sits on the bottleneck and the
//! access links are ideal (Fig. 4-1: sources and sinks on the two ends of one link). Otherwise
//! the bottleneck has no delay and each sender's access link carries half its RTT each way
//! (Fig. 4-5). The way back has the bottleneck's rate and delay and a queue that never fills.
//! Random loss applies to the bottleneck's forward direction (data), and, if given, to the way
//! back (ACKs and NAKs); jitter, if given, to the bottleneck's delay both ways. UDT flows use
//! the runtime's default configuration unless [`DumbbellRun::buffers`] overrides it.

use std::path::PathBuf;
use std::time::Duration;

use crate::report::{FlowResult, RunParams, RunResult};
use udt_sim::flow::{CcChoice, FlowSpec};
use udt_sim::link::{bdp_packets, Jitter, JitterDist, LinkConfig, LossModel, QueueConfig, RedConfig};
use udt_sim::network::Network;
use udt_sim::run::{run, RunTrace, Window};
use udt_sim::topology::shapes::{dumbbell, BOTTLENECK};

/// The bottleneck queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueChoice {
    /// DropTail of this many packets.
    DropTail(usize),
    /// RED (NS-2 automatic parameters) with this physical limit.
    Red(usize),
}

impl QueueChoice {
    /// The limit in packets.
    pub fn packets(&self) -> usize {
        match *self {
            QueueChoice::DropTail(n) | QueueChoice::Red(n) => n,
        }
    }
}

/// One flow of a dumbbell run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowDef {
    /// Congestion control.
    pub cc: CcChoice,
    /// Round-trip propagation time.
    pub rtt: Duration,
    /// Start.
    pub start: Duration,
    /// Stop.
    pub stop: Option<Duration>,
}

/// A dumbbell run.
#[derive(Clone, Debug)]
pub struct DumbbellRun {
    /// Row label.
    pub label: String,
    /// Bottleneck rate, bits/s.
    pub bw_bps: u64,
    /// The measured flows.
    pub flows: Vec<FlowDef>,
    /// A background CBR flow: (time, bits/s) schedule.
    pub cbr: Option<Vec<(Duration, u64)>>,
    /// Bottleneck queue.
    pub queue: QueueChoice,
    /// Random loss on the bottleneck (data direction).
    pub loss: LossModel,
    /// Random loss on the way back (ACKs, NAKs).
    pub reverse_loss: LossModel,
    /// Jitter of the bottleneck's delay, each way (never reordering).
    pub jitter: Jitter,
    /// Buffers and flow window of every UDT flow, packets; `None`: the runtime's defaults.
    pub buffers: Option<u32>,
    /// Every flow's receiver behaves as a UDT4 4.11 receiver ([`FlowSpec::udt4_receiver`]).
    pub udt4_receivers: bool,
    /// Virtual time.
    pub time: Duration,
    /// Measures start here.
    pub warmup: Duration,
    /// Sampling interval.
    pub sample: Duration,
    /// Samples of this length for stability.
    pub stability_sample: Duration,
    /// Seed.
    pub seed: u64,
    /// The thesis' figure for this run.
    pub thesis: Option<String>,
    /// Capture the bottleneck.
    pub pcap: Option<PathBuf>,
}

impl DumbbellRun {
    /// `n` flows of `cc` with the same `rtt` on `bw_bps`, DropTail queue max(BDP, 10), no loss,
    /// sampled every 100 ms, stability over 1 s samples.
    pub fn uniform(label: impl Into<String>, bw_bps: u64, rtt: Duration, n: usize, cc: CcChoice) -> Self {
        DumbbellRun {
            label: label.into(),
            bw_bps,
            flows: vec![FlowDef { cc, rtt, start: Duration::ZERO, stop: None }; n],
            cbr: None,
            queue: QueueChoice::DropTail(bdp_packets(bw_bps, rtt, 1500).max(10)),
            loss: LossModel::None,
            reverse_loss: LossModel::None,
            jitter: Jitter::default(),
            buffers: None,
            udt4_receivers: false,
            time: Duration::from_secs(30),
            warmup: Duration::from_secs(10),
            sample: Duration::from_millis(100),
            stability_sample: Duration::from_secs(1),
            seed: 1,
            thesis: None,
            pcap: None,
        }
    }

    /// Apply the free-form queue, loss, sampling, seed and capture parameters.
    pub fn with_params(mut self, p: &super::Params) -> Self {
        if let Some(q) = p.queue_pkts {
            self.queue = QueueChoice::DropTail(q);
        }
        if p.red {
            self.queue = QueueChoice::Red(self.queue.packets());
        }
        self.udt4_receivers |= p.udt4_receivers;
        let model = |l: f64| match p.burst {
            Some(b) => LossModel::GilbertElliott(udt_sim::link::GilbertElliott::from_rate_and_burst(l, b)),
            None if l > 0.0 => LossModel::Bernoulli(l),
            None => LossModel::None,
        };
        if let Some(l) = p.loss {
            self.loss = model(l);
        }
        if let Some(l) = p.reverse_loss {
            self.reverse_loss = model(l);
        }
        if let Some(j) = p.jitter_ms {
            self.jitter = Jitter { amount: super::secs(j / 1e3), dist: JitterDist::Uniform };
        }
        if let Some(s) = p.sample_s {
            self.sample = super::secs(s);
        }
        self.seed = p.seed;
        self
    }

    fn uniform_rtt(&self) -> Option<Duration> {
        let first = self.flows.first()?.rtt;
        self.flows.iter().all(|f| f.rtt == first).then_some(first)
    }

    /// Build the network.
    pub fn build(&self) -> Result<Network, String> {
        let uniform = self.uniform_rtt();
        let one_way = uniform.map_or(Duration::ZERO, |r| r / 2);
        let queue = match self.queue {
            QueueChoice::DropTail(n) => QueueConfig::DropTailPackets(n),
            QueueChoice::Red(n) => QueueConfig::Red(RedConfig::ns2_auto(n, self.bw_bps, one_way)),
        };
        let jitter = self.jitter;
        let forward =
            LinkConfig { queue, loss: self.loss, jitter, ..LinkConfig::new(self.bw_bps, one_way, 0) };
        let reverse =
            LinkConfig { loss: self.reverse_loss, jitter, ..LinkConfig::new(self.bw_bps, one_way, 1 << 20) };
        let mut access: Vec<LinkConfig> = self
            .flows
            .iter()
            .map(|f| if uniform.is_some() { LinkConfig::ideal() } else { LinkConfig::delay(f.rtt / 2) })
            .collect();
        if self.cbr.is_some() {
            access.push(LinkConfig::ideal());
        }
        let mut d = dumbbell(forward, reverse, &access);
        for (i, f) in self.flows.iter().enumerate() {
            let label = format!("{}{}", f.cc.spec().name, i + 1);
            let mut spec = FlowSpec::udt(label, d.senders[i], d.receivers[i], f.cc).starting(f.start);
            if let Some(pkts) = self.buffers {
                spec = spec.buffers(pkts);
            }
            if self.udt4_receivers {
                spec = spec.udt4_receiver();
            }
            if let Some(stop) = f.stop {
                spec = spec.stopping(stop);
            }
            d.topo.flow(spec);
        }
        if let Some(schedule) = &self.cbr {
            let n = self.flows.len();
            d.topo.flow(FlowSpec::cbr("cbr", d.senders[n], d.receivers[n], 1472, schedule.clone()));
        }
        if let Some(path) = &self.pcap {
            d.topo.capture(d.bottleneck, path.clone());
        }
        d.topo.build(self.seed)
    }

    /// Build, run and measure.
    pub fn run(&self) -> Result<RunResult, String> {
        let mut net = self.build()?;
        let trace = run(&mut net, self.time, self.sample);
        if self.pcap.is_some() {
            net.finish_captures().map_err(|e| format!("pcap: {e}"))?;
        }
        let measured: Vec<usize> = (0..self.flows.len()).collect();
        let window = Window {
            from: self.warmup,
            to: self.time,
            capacity_bps: self.bw_bps as f64,
            stability_interval: self.stability_sample,
            hold: Duration::from_secs(1),
        };
        let mut ccs: Vec<String> = self.flows.iter().map(|f| f.cc.label()).collect();
        ccs.dedup();
        let params = RunParams {
            bw_mbps: self.bw_bps as f64 / 1e6,
            rtt_ms: self.flows.iter().map(|f| f.rtt.as_secs_f64() * 1e3).collect(),
            loss: self.loss.mean_loss(),
            queue: match self.queue {
                QueueChoice::DropTail(_) => "droptail".into(),
                QueueChoice::Red(_) => "red".into(),
            },
            queue_pkts: self.queue.packets(),
            flows: trace.flows.len(),
            cc: ccs.join("+"),
            time_s: self.time.as_secs_f64(),
            warmup_s: self.warmup.as_secs_f64(),
            sample_s: self.sample.as_secs_f64(),
            seed: self.seed,
            jitter_ms: (!self.jitter.is_none()).then_some(self.jitter.amount.as_secs_f64() * 1e3),
            udt4_receivers: self.udt4_receivers,
        };
        Ok(run_result(&self.label, params, trace, &window, &measured, self.thesis.clone()))
    }

    /// Name of the bottleneck link.
    pub fn bottleneck_name() -> &'static str {
        BOTTLENECK
    }
}

/// The result of a run: measures of flows `measured` over `window`, every flow's mean.
pub fn run_result(
    label: &str,
    params: RunParams,
    trace: RunTrace,
    window: &Window,
    measured: &[usize],
    thesis: Option<String>,
) -> RunResult {
    let measures = trace.measures(window, measured);
    let r = trace.samples(window.from, window.to);
    let flows = trace
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| FlowResult {
            label: f.label.clone(),
            cc: f.cc.clone(),
            start_s: f.start.as_secs_f64(),
            stop_s: f.stop.map(|s| s.as_secs_f64()),
            mean_mbps: trace.mean_mbps(i, r.clone()),
        })
        .collect();
    RunResult {
        label: label.to_string(),
        params,
        flows,
        measures,
        thesis,
        wall_s: trace.wall.as_secs_f64(),
        deliveries: trace.engine.deliveries,
        deliveries_per_sec: trace.deliveries_per_sec(),
        data_packets: trace.data_packets(),
        trace_hash: format!("{:016x}", trace.trace_hash),
        trace: Some(trace),
    }
}
