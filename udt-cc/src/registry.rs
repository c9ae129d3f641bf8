//! Congestion control by name: the catalog of built-in algorithms and the factory lookup behind
//! `--cc NAME[:key=value,...]` and [`Config::cc`](udt_proto::connection::Config).
//!
//! Each [`CcInfo`] names an algorithm, lists its parameters in the parameter table
//! ([`crate::params`]) and builds a [`CcFactory`] from a [`CcParams`]. [`factory`] parses a
//! specification, finds the entry by name or alias, lets it take its parameters (each checked
//! against its table entry) and refuses any it did not take.
//!
//! Invariants: names and aliases are unique across the catalog and lowercase; an entry can only
//! read parameters its table lists, and every listed parameter is read (checked by tests).

use std::sync::Arc;
use std::time::Duration;

use crate::bbr::{BbrConfig, BbrFactory};
use crate::bic::{Bic, BicConfig};
use crate::cubic::{Cubic, CubicConfig};
use crate::fast::{Fast, FastConfig};
use crate::gtp::{GtpConfig, GtpFactory, ManagerConfig};
use crate::highspeed::HighSpeed;
use crate::model::{ModelConfig, ModelFactory};
use crate::newreno::NewReno;
pub use crate::params::ParamInfo;
use crate::params::{Kind, Value};
use crate::scalable::Scalable;
use crate::spec::{CcParams, CcSpec, CcSpecError};
use crate::tcp::{TcpConfig, TcpFactory};
use crate::vegas::{Vegas, VegasConfig};
use crate::westwood::Westwood;
use crate::{BlastFactory, CcFactory, NativeConfig, NativeFactory};

/// How an algorithm builds its factory from parameters.
pub type BuildFn = fn(&mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError>;

/// One algorithm of the catalog.
#[derive(Clone, Copy, Debug)]
pub struct CcInfo {
    /// Canonical name.
    pub name: &'static str,
    /// Other accepted names.
    pub aliases: &'static [&'static str],
    /// One line for `udt cc list`.
    pub summary: &'static str,
    /// Where the algorithm comes from (thesis section, RFC, paper).
    pub reference: &'static str,
    /// Whether it is a window-based, ACK-clocked TCP algorithm (the TCP side of friendliness
    /// experiments).
    pub tcp_like: bool,
    /// Whether the receiving end must run the same algorithm (its controller answers with
    /// custom control messages). What the receiver reports, ACK frequency included, follows
    /// the sender's policy whatever the receiving end runs.
    pub both_ends: bool,
    /// Its parameters.
    pub params: &'static [ParamInfo],
    /// Builds the factory.
    pub build: BuildFn,
}

impl CcInfo {
    /// Whether `name` (lowercase) is this algorithm's name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

const fn real(min: f64, max: f64) -> Kind {
    Kind::Real { min, max }
}

const fn whole(min: u64, max: u64) -> Kind {
    Kind::Whole { min, max }
}

/// The parameters every TCP variant takes.
pub const TCP_PARAMS: [ParamInfo; 2] = [
    ParamInfo {
        key: "ack",
        kind: whole(1, 64),
        unit: "packets",
        default: || Value::Whole(u64::from(TcpConfig::default().ack_every)),
        doc: "the receiver acknowledges every N packets",
    },
    ParamInfo {
        key: "iw",
        kind: real(1.0, 1e6),
        unit: "packets",
        default: || Value::Real(TcpConfig::default().initial_window),
        doc: "initial window",
    },
];

/// Read the shared TCP parameters.
pub fn tcp_config(p: &mut CcParams) -> Result<TcpConfig, CcSpecError> {
    Ok(TcpConfig { ack_every: p.whole("ack")? as u32, initial_window: p.real("iw")? })
}

static MODEL_PARAMS: [ParamInfo; 8] = [
    ParamInfo {
        key: "startup_gain",
        kind: real(1.01, 10.0),
        unit: "x bandwidth",
        default: || Value::Real(ModelConfig::default().startup_gain),
        doc: "Startup pacing gain",
    },
    ParamInfo {
        key: "cwnd_gain",
        kind: real(1.0, 10.0),
        unit: "x BDP",
        default: || Value::Real(ModelConfig::default().cwnd_gain),
        doc: "window on packets in flight",
    },
    ParamInfo {
        key: "loss",
        kind: Kind::Fraction,
        unit: "",
        default: || Value::Real(ModelConfig::default().loss_threshold),
        doc: "lost fraction of a loss window that means congestion",
    },
    ParamInfo {
        key: "beta",
        kind: Kind::Fraction,
        unit: "",
        default: || Value::Real(ModelConfig::default().loss_beta),
        doc: "rate kept per congested loss window while cruising",
    },
    ParamInfo {
        key: "os_beta",
        kind: Kind::Fraction,
        unit: "",
        default: || Value::Real(ModelConfig::default().oversubscribed_beta),
        doc: "rate kept when losses while cruising stop in the probe's down phase (an over-subscribed queue)",
    },
    ParamInfo {
        key: "cruise",
        kind: whole(1, 100_000),
        unit: "ACK periods",
        default: || Value::Whole(u64::from(ModelConfig::default().cruise_syn.0)),
        doc: "time between bandwidth probes, at least (drawn from N to 2N); more is gentler on TCP, slower to converge",
    },
    ParamInfo {
        key: "inc",
        kind: Kind::Fraction,
        unit: "x capacity",
        default: || Value::Real(ModelConfig::default().cap_increase),
        doc: "loss bound raised per probe cycle without congestion",
    },
    ParamInfo {
        key: "iw",
        kind: real(2.0, 1e6),
        unit: "packets",
        default: || Value::Real(ModelConfig::default().initial_window),
        doc: "packets per initial RTT before the first rate sample",
    },
];

fn build_model(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let config = ModelConfig {
        startup_gain: p.real("startup_gain")?,
        cwnd_gain: p.real("cwnd_gain")?,
        loss_threshold: p.real("loss")?,
        loss_beta: p.real("beta")?,
        oversubscribed_beta: p.real("os_beta")?,
        initial_window: p.real("iw")?,
        cruise_syn: {
            let lo = p.whole("cruise")? as u32;
            (lo, lo * 2)
        },
        cap_increase: p.real("inc")?,
        ..ModelConfig::default()
    };
    config.validate().map_err(|e| CcSpecError(format!("udt: {e}")))?;
    Ok(Arc::new(ModelFactory(config)))
}

static DAIMD_PARAMS: [ParamInfo; 4] = [
    ParamInfo {
        key: "noisy",
        kind: Kind::Switch,
        unit: "",
        default: || Value::Switch(NativeConfig::default().noisy_link),
        doc: "ignore the first loss of each event",
    },
    ParamInfo {
        key: "freeze",
        kind: Kind::Switch,
        unit: "",
        default: || Value::Switch(NativeConfig::default().freeze_on_congestion),
        doc: "stop sending one SYN after a decrease",
    },
    ParamInfo {
        key: "rc",
        kind: Kind::Switch,
        unit: "",
        default: || Value::Switch(NativeConfig::default().rate_correction),
        doc: "correct the period with the measured one",
    },
    ParamInfo {
        key: "iw",
        kind: real(2.0, 1e6),
        unit: "packets",
        default: || Value::Real(NativeConfig::default().initial_window),
        doc: "initial window",
    },
];

fn build_daimd(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(NativeFactory(NativeConfig {
        noisy_link: p.switch("noisy")?,
        freeze_on_congestion: p.switch("freeze")?,
        rate_correction: p.switch("rc")?,
        initial_window: p.real("iw")?,
    })))
}

static BLAST_PARAMS: [ParamInfo; 1] = [ParamInfo {
    key: "rate",
    kind: Kind::Rate,
    unit: "bits/s",
    default: || Value::Rate(0),
    doc: "sending rate; 0 = unlimited",
}];

fn build_blast(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(BlastFactory::new(p.rate("rate")?)))
}

fn build_newreno(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(TcpFactory::new(tcp_config(p)?, NewReno)))
}

static GTP_PARAMS: [ParamInfo; 7] = [
    ParamInfo {
        key: "capacity",
        kind: Kind::Rate,
        unit: "bits/s",
        default: || Value::Rate(GtpConfig::default().manager.capacity),
        doc: "receiver capacity shared by the group (above 0)",
    },
    ParamInfo {
        key: "init",
        kind: Kind::Rate,
        unit: "bits/s",
        default: || Value::Rate(GtpConfig::default().initial_rate),
        doc: "sending rate until the first allocation",
    },
    ParamInfo {
        key: "request",
        kind: Kind::Rate,
        unit: "bits/s",
        default: || Value::Rate(GtpConfig::default().request),
        doc: "sender's rate request; 0 = none",
    },
    ParamInfo {
        key: "interval",
        kind: whole(0, 60_000),
        unit: "ms",
        default: || Value::Whole(GtpConfig::default().interval.map_or(0, |d| d.as_millis() as u64)),
        doc: "control interval; 0 = max(SYN, RTT)",
    },
    ParamInfo {
        key: "headroom",
        kind: real(0.01, 1.0),
        unit: "",
        default: || Value::Real(GtpConfig::default().manager.headroom),
        doc: "extra share for a flow using less",
    },
    ParamInfo {
        key: "loss",
        kind: real(0.0, 1.0),
        unit: "",
        default: || Value::Real(GtpConfig::default().manager.loss_threshold),
        doc: "loss fraction capping a flow at its arrival rate",
    },
    ParamInfo {
        key: "idle",
        kind: whole(1, 3_600_000),
        unit: "ms",
        default: || Value::Whole(GtpConfig::default().manager.idle.as_millis() as u64),
        doc: "drop a flow silent this long",
    },
];

fn build_gtp(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let capacity = p.rate("capacity")?;
    if capacity == 0 {
        return Err(CcSpecError("gtp: capacity must be positive".into()));
    }
    let interval_ms = p.whole("interval")?;
    Ok(Arc::new(GtpFactory::new(GtpConfig {
        manager: ManagerConfig {
            capacity,
            headroom: p.real("headroom")?,
            loss_threshold: p.real("loss")?,
            idle: Duration::from_millis(p.whole("idle")?),
        },
        initial_rate: p.rate("init")?,
        request: p.rate("request")?,
        interval: (interval_ms > 0).then(|| Duration::from_millis(interval_ms)),
    })))
}

static VEGAS_PARAMS: [ParamInfo; 5] = [
    TCP_PARAMS[0],
    TCP_PARAMS[1],
    ParamInfo {
        key: "alpha",
        kind: real(0.0, 1e6),
        unit: "packets",
        default: || Value::Real(VegasConfig::default().alpha),
        doc: "grow by 1 per RTT below this many packets queued",
    },
    ParamInfo {
        key: "beta",
        kind: real(0.0, 1e6),
        unit: "packets",
        default: || Value::Real(VegasConfig::default().beta),
        doc: "shrink by 1 per RTT above this many packets queued (at least alpha)",
    },
    ParamInfo {
        key: "gamma",
        kind: real(0.0, 1e6),
        unit: "packets",
        default: || Value::Real(VegasConfig::default().gamma),
        doc: "leave slow start above this many packets queued",
    },
];

fn build_vegas(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let config = tcp_config(p)?;
    let (alpha, beta, gamma) = (p.real("alpha")?, p.real("beta")?, p.real("gamma")?);
    if beta < alpha {
        return Err(CcSpecError(format!("vegas: beta={beta} must not be below alpha={alpha}")));
    }
    Ok(Arc::new(TcpFactory::new(config, Vegas::new(VegasConfig { alpha, beta, gamma }))))
}

static FAST_PARAMS: [ParamInfo; 4] = [
    TCP_PARAMS[0],
    TCP_PARAMS[1],
    ParamInfo {
        key: "alpha",
        kind: real(1.0, 1e6),
        unit: "packets",
        default: || Value::Real(FastConfig::default().alpha),
        doc: "packets kept queued at the bottleneck",
    },
    ParamInfo {
        key: "gamma",
        kind: real(0.01, 1.0),
        unit: "",
        default: || Value::Real(FastConfig::default().gamma),
        doc: "update smoothing",
    },
];

fn build_fast(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let config = tcp_config(p)?;
    let fast = FastConfig { alpha: p.real("alpha")?, gamma: p.real("gamma")? };
    Ok(Arc::new(TcpFactory::new(config, Fast::new(fast))))
}

static BBR_PARAMS: [ParamInfo; 4] = [
    ParamInfo {
        key: "startup_gain",
        kind: real(1.0, 10.0),
        unit: "",
        default: || Value::Real(BbrConfig::default().startup_gain),
        doc: "Startup pacing and window gain (2/ln 2)",
    },
    ParamInfo {
        key: "cwnd_gain",
        kind: real(1.0, 10.0),
        unit: "x BDP",
        default: || Value::Real(BbrConfig::default().cwnd_gain),
        doc: "ProbeBW window gain",
    },
    ParamInfo {
        key: "probe_rtt_ms",
        kind: whole(1, 10_000),
        unit: "ms",
        default: || Value::Whole(BbrConfig::default().probe_rtt.as_millis() as u64),
        doc: "ProbeRTT duration",
    },
    ParamInfo {
        key: "iw",
        kind: real(1.0, 1e6),
        unit: "packets",
        default: || Value::Real(BbrConfig::default().initial_window),
        doc: "initial window",
    },
];

fn build_bbr(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(BbrFactory(BbrConfig {
        startup_gain: p.real("startup_gain")?,
        cwnd_gain: p.real("cwnd_gain")?,
        probe_rtt: Duration::from_millis(p.whole("probe_rtt_ms")?),
        initial_window: p.real("iw")?,
    })))
}

static SCALABLE_PARAMS: [ParamInfo; 5] = [
    TCP_PARAMS[0],
    TCP_PARAMS[1],
    ParamInfo {
        key: "a",
        kind: real(1e-6, 1.0),
        unit: "packets",
        default: || Value::Real(Scalable::default().a),
        doc: "increase per ACKed packet (thesis table: 0.1)",
    },
    ParamInfo {
        key: "b",
        kind: Kind::Fraction,
        unit: "",
        default: || Value::Real(Scalable::default().b),
        doc: "fraction of the window removed per loss",
    },
    ParamInfo {
        key: "lwnd",
        kind: real(0.0, 1e6),
        unit: "packets",
        default: || Value::Real(Scalable::default().lwnd),
        doc: "legacy window: Reno at or below it",
    },
];

fn build_scalable(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let tcp = tcp_config(p)?;
    let s = Scalable { a: p.real("a")?, b: p.real("b")?, lwnd: p.real("lwnd")? };
    Ok(Arc::new(TcpFactory::new(tcp, s)))
}

static HIGHSPEED_PARAMS: [ParamInfo; 6] = [
    TCP_PARAMS[0],
    TCP_PARAMS[1],
    ParamInfo {
        key: "low_window",
        kind: real(2.0, 1e6),
        unit: "packets",
        default: || Value::Real(HighSpeed::default().low_window),
        doc: "Reno at or below it",
    },
    ParamInfo {
        key: "high_window",
        kind: real(2.0, 1e9),
        unit: "packets",
        default: || Value::Real(HighSpeed::default().high_window),
        doc: "window reached at high_p (above low_window)",
    },
    ParamInfo {
        key: "high_p",
        kind: real(1e-15, 1.0),
        unit: "",
        default: || Value::Real(HighSpeed::default().high_p),
        doc: "loss rate at high_window",
    },
    ParamInfo {
        key: "high_decrease",
        kind: real(0.001, 0.5),
        unit: "",
        default: || Value::Real(HighSpeed::default().high_decrease),
        doc: "b(high_window)",
    },
];

fn build_highspeed(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let tcp = tcp_config(p)?;
    let h = HighSpeed {
        low_window: p.real("low_window")?,
        high_window: p.real("high_window")?,
        high_p: p.real("high_p")?,
        high_decrease: p.real("high_decrease")?,
    };
    if h.high_window <= h.low_window {
        return Err(CcSpecError(format!(
            "highspeed: high_window={} must be above low_window={}",
            h.high_window, h.low_window
        )));
    }
    if h.high_p >= h.low_p() {
        return Err(CcSpecError(format!(
            "highspeed: high_p={} must be below Reno's loss rate at low_window ({:.3e})",
            h.high_p,
            h.low_p()
        )));
    }
    Ok(Arc::new(TcpFactory::new(tcp, h)))
}

static BIC_PARAMS: [ParamInfo; 7] = [
    TCP_PARAMS[0],
    TCP_PARAMS[1],
    ParamInfo {
        key: "smax",
        kind: real(1.0, 1e6),
        unit: "packets",
        default: || Value::Real(BicConfig::default().smax),
        doc: "largest increase per RTT",
    },
    ParamInfo {
        key: "smin",
        kind: real(1e-6, 1e6),
        unit: "packets",
        default: || Value::Real(BicConfig::default().smin),
        doc: "smallest increase per RTT (at most smax)",
    },
    ParamInfo {
        key: "beta",
        kind: Kind::Fraction,
        unit: "",
        default: || Value::Real(BicConfig::default().beta),
        doc: "fraction of the window removed per loss",
    },
    ParamInfo {
        key: "low_window",
        kind: real(0.0, 1e6),
        unit: "packets",
        default: || Value::Real(BicConfig::default().low_window),
        doc: "Reno at or below it",
    },
    ParamInfo {
        key: "fast_convergence",
        kind: Kind::Switch,
        unit: "",
        default: || Value::Switch(BicConfig::default().fast_convergence),
        doc: "lower w_max on an early loss",
    },
];

fn build_bic(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let tcp = tcp_config(p)?;
    let c = BicConfig {
        smax: p.real("smax")?,
        smin: p.real("smin")?,
        beta: p.real("beta")?,
        low_window: p.real("low_window")?,
        fast_convergence: p.switch("fast_convergence")?,
    };
    if c.smin > c.smax {
        return Err(CcSpecError(format!("bic: smin={} must not exceed smax={}", c.smin, c.smax)));
    }
    Ok(Arc::new(TcpFactory::new(tcp, Bic::new(c))))
}

fn build_westwood(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(TcpFactory::new(tcp_config(p)?, Westwood::default())))
}

static CUBIC_PARAMS: [ParamInfo; 6] = [
    TCP_PARAMS[0],
    TCP_PARAMS[1],
    ParamInfo {
        key: "c",
        kind: real(1e-3, 1e3),
        unit: "packets/s^3",
        default: || Value::Real(CubicConfig::default().c),
        doc: "C",
    },
    ParamInfo {
        key: "beta",
        kind: Kind::Fraction,
        unit: "",
        default: || Value::Real(CubicConfig::default().beta),
        doc: "window kept on a loss event",
    },
    ParamInfo {
        key: "fast_convergence",
        kind: Kind::Switch,
        unit: "",
        default: || Value::Switch(CubicConfig::default().fast_convergence),
        doc: "lower W_max on an early loss",
    },
    ParamInfo {
        key: "tcp_friendly",
        kind: Kind::Switch,
        unit: "",
        default: || Value::Switch(CubicConfig::default().tcp_friendly),
        doc: "at least Reno's rate (W_est)",
    },
];

fn build_cubic(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let tcp = tcp_config(p)?;
    let c = CubicConfig {
        c: p.real("c")?,
        beta: p.real("beta")?,
        fast_convergence: p.switch("fast_convergence")?,
        tcp_friendly: p.switch("tcp_friendly")?,
    };
    Ok(Arc::new(TcpFactory::new(tcp, Cubic::new(c))))
}

/// The built-in algorithms.
static CATALOG: &[CcInfo] = &[
    CcInfo {
        name: "udt",
        aliases: &["default", "model"],
        summary:
            "the default: model-based pacing at the measured bandwidth (BBR's structure on UDT's signals)",
        reference: "docs/congestion-control.md; Cardwell et al., ACM Queue 2016; BBRv3",
        tcp_like: false,
        both_ends: false,
        params: &MODEL_PARAMS,
        build: build_model,
    },
    CcInfo {
        name: "daimd",
        aliases: &["thesis", "native", "udt4"],
        summary: "the thesis' DAIMD rate control with packet-pair bandwidth estimation (UDT4 4.11 CUDTCC)",
        reference: "thesis §2.2.5, ch. 3; UDT4 4.11 CUDTCC",
        tcp_like: false,
        both_ends: false,
        params: &DAIMD_PARAMS,
        build: build_daimd,
    },
    CcInfo {
        name: "blast",
        aliases: &["udpblast", "fixed"],
        summary: "UDP blast: a fixed sending rate, changeable at run time, no reaction to loss",
        reference: "thesis §5.3.1, UDT4 demo CUDPBlast",
        tcp_like: false,
        both_ends: false,
        params: &BLAST_PARAMS,
        build: build_blast,
    },
    CcInfo {
        name: "newreno",
        aliases: &["tcp", "reno", "ctcp"],
        summary: "TCP NewReno: slow start, +1 packet per RTT, half the window per loss event",
        reference: "thesis §5.3.2 CTCP; RFC 5681, RFC 6582",
        tcp_like: true,
        both_ends: false,
        params: &TCP_PARAMS,
        build: build_newreno,
    },
    CcInfo {
        name: "gtp",
        aliases: &["cgtp"],
        summary:
            "Group Transport Protocol: the receiver divides its capacity max-min fairly among its senders",
        reference: "thesis §5.3.5 CGTP; Wu & Chien, GTP, CCGrid 2004",
        tcp_like: false,
        both_ends: true,
        params: &GTP_PARAMS,
        build: build_gtp,
    },
    CcInfo {
        name: "vegas",
        aliases: &["cvegas"],
        summary: "TCP Vegas: keeps alpha..beta packets queued, +-1 packet per RTT; Reno on loss",
        reference: "thesis §5.3.4 CVegas; Brakmo & Peterson 1995; Linux tcp_vegas.c",
        tcp_like: true,
        both_ends: false,
        params: &VEGAS_PARAMS,
        build: build_vegas,
    },
    CcInfo {
        name: "fast",
        aliases: &["fasttcp", "cfast"],
        summary: "FAST TCP: window equation every other RTT toward alpha packets queued; 7/8 on loss",
        reference: "thesis §5.3.4 CFAST; Jin, Wei & Low, Infocom 2004",
        tcp_like: true,
        both_ends: false,
        params: &FAST_PARAMS,
        build: build_fast,
    },
    CcInfo {
        name: "bbr",
        aliases: &["bbr1"],
        summary: "BBR v1: paces at the max delivery rate, window 2 BDP, ProbeBW/ProbeRTT; ignores loss",
        reference: "Cardwell et al., ACM Queue 2016; draft-cardwell-iccrg-bbr-congestion-control-00",
        tcp_like: false,
        both_ends: false,
        params: &BBR_PARAMS,
        build: build_bbr,
    },
    CcInfo {
        name: "scalable",
        aliases: &["stcp"],
        summary: "Scalable TCP: +a per ACKed packet (MIMD), 1/8 off per loss event, Reno up to lwnd",
        reference: "thesis §5.3.3, Table 3-1; Kelly, CCR 2003",
        tcp_like: true,
        both_ends: false,
        params: &SCALABLE_PARAMS,
        build: build_scalable,
    },
    CcInfo {
        name: "highspeed",
        aliases: &["hstcp"],
        summary: "HighSpeed TCP: AIMD with a(w), b(w) from the response function 0.12/p^0.835",
        reference: "thesis Table 3-1; RFC 3649",
        tcp_like: true,
        both_ends: false,
        params: &HIGHSPEED_PARAMS,
        build: build_highspeed,
    },
    CcInfo {
        name: "bic",
        aliases: &["bictcp"],
        summary: "BiC TCP: binary search towards the last loss window, additive steps up to Smax",
        reference: "thesis Table 3-1; Xu, Harfoush, Rhee, INFOCOM 2004",
        tcp_like: true,
        both_ends: false,
        params: &BIC_PARAMS,
        build: build_bic,
    },
    CcInfo {
        name: "westwood",
        aliases: &["westwood-plus"],
        summary: "TCP Westwood+: Reno increase, window = bandwidth estimate x min RTT after a loss",
        reference: "Mascolo et al., MobiCom 2001; Grieco, Mascolo 2004 (Westwood+)",
        tcp_like: true,
        both_ends: false,
        params: &TCP_PARAMS,
        build: build_westwood,
    },
    CcInfo {
        name: "cubic",
        aliases: &[],
        summary: "CUBIC: window a cubic function of the time since the last loss, Reno-friendly",
        reference: "RFC 9438 (obsoletes RFC 8312)",
        tcp_like: true,
        both_ends: false,
        params: &CUBIC_PARAMS,
        build: build_cubic,
    },
];

/// Every built-in algorithm, in the order `udt cc list` shows them.
pub fn catalog() -> &'static [CcInfo] {
    CATALOG
}

/// The catalog entry answering to `name` (any case).
pub fn lookup(name: &str) -> Option<&'static CcInfo> {
    let name = name.to_ascii_lowercase();
    CATALOG.iter().find(|i| i.answers_to(&name))
}

/// A factory for `spec`.
pub fn factory_for(spec: &CcSpec) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let info = lookup(&spec.name).ok_or_else(|| {
        let names: Vec<&str> = CATALOG.iter().map(|i| i.name).collect();
        CcSpecError(format!("unknown congestion control {:?} (known: {})", spec.name, names.join(", ")))
    })?;
    let mut params = CcParams::new(spec, info.params);
    let factory = (info.build)(&mut params)?;
    params.finish()?;
    Ok(factory)
}

/// A factory for the specification `text` (`NAME[:key=value,...]`).
pub fn factory(text: &str) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    factory_for(&CcSpec::parse(text)?)
}

/// The specification every connection, tool and simulator flow uses unless told otherwise.
pub const DEFAULT_CC: &str = "udt";

/// A factory for [`DEFAULT_CC`].
pub fn default_factory() -> Arc<dyn CcFactory> {
    factory(DEFAULT_CC).expect("the default specification is in the catalog")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lowercase() {
        let mut seen = std::collections::HashSet::new();
        for info in catalog() {
            for n in std::iter::once(&info.name).chain(info.aliases) {
                assert_eq!(*n, n.to_ascii_lowercase());
                assert!(seen.insert(*n), "{n} twice");
            }
        }
    }

    #[test]
    fn every_entry_builds_with_defaults_and_names_itself() {
        for info in catalog() {
            let f = factory(info.name).unwrap_or_else(|e| panic!("{}: {e}", info.name));
            let cc = f.build();
            // Controllers name themselves with the catalog name.
            assert!(info.answers_to(cc.name()), "{} built {:?}", info.name, cc.name());
            assert!(cc.congestion_window() >= 1.0);
        }
    }

    #[test]
    fn every_documented_parameter_is_accepted() {
        for info in catalog() {
            for p in info.params {
                let spec = format!("{}:{}={}", info.name, p.key, p.default_text());
                factory(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            }
        }
    }

    #[test]
    fn lookups_and_errors() {
        assert_eq!(lookup("TCP").map(|i| i.name), Some("newreno"));
        assert_eq!(factory("reno:ack=1").unwrap().policy().ack_interval, Some(1));
        let e = factory("nosuch").unwrap_err().0;
        assert!(e.contains("unknown congestion control") && e.contains("newreno"), "{e}");
        let e = factory("daimd:noisy=true,speed=9").unwrap_err().0;
        assert!(e.contains("speed") && e.contains("noisy"), "{e}");
        assert!(factory("udt:noisy=true").is_err(), "the default has no DAIMD options");
        assert!(factory("udt:loss=1").is_err() && factory("udt:beta=0").is_err());
        assert!(factory("udt:cruise=200,inc=0.1").is_ok());
        assert!(factory("udt:cruise=0").is_err() && factory("udt:inc=1").is_err());
        assert_eq!(factory("default").unwrap().build().name(), "udt");
        assert!(factory("newreno:ack=0").is_err());
        assert!(factory("blast:rate=fast").is_err());
        assert_eq!(factory("blast:rate=12m").unwrap().build().send_period().as_micros(), 1000);
        assert_eq!(factory("gtp:init=12m").unwrap().build().send_period().as_micros(), 1000);
        assert_eq!(lookup("CGTP").map(|i| i.name), Some("gtp"));
        assert!(factory("gtp:capacity=0").is_err());
        assert!(factory("gtp:headroom=0").is_err());
        assert_eq!(factory("vegas:alpha=1,beta=3,ack=1").unwrap().policy().ack_interval, Some(1));
        assert!(factory("vegas:alpha=4,beta=2").is_err(), "beta below alpha");
        assert_eq!(factory("fasttcp:alpha=50").unwrap().build().name(), "fast");
        assert!(factory("fast:gamma=2").is_err());
        let bbr = factory("bbr:iw=20,probe_rtt_ms=100").unwrap();
        assert_eq!((bbr.build().congestion_window(), bbr.policy().ack_interval), (20.0, None));
    }

    #[test]
    fn loss_based_tcp_variants() {
        assert_eq!(lookup("HSTCP").map(|i| i.name), Some("highspeed"));
        assert_eq!(lookup("stcp").map(|i| i.name), Some("scalable"));
        for spec in [
            "scalable:a=0.1,b=0.125,lwnd=0",
            "highspeed:low_window=38,high_window=83000,high_p=1e-7,high_decrease=0.1,ack=1",
            "bic:smax=16,smin=0.01,beta=0.2,low_window=14,fast_convergence=off",
            "westwood:iw=4",
            "cubic:c=0.4,beta=0.8,fast_convergence=false,tcp_friendly=no",
        ] {
            let info = lookup(&CcSpec::parse(spec).unwrap().name).unwrap();
            // The ACK interval is offered to the receiving end: it may run anything.
            assert!(info.tcp_like && !info.both_ends, "{spec}");
            let factory = factory(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert!(factory.policy().ack_interval.is_some(), "{spec}");
            assert!(info.answers_to(factory.build().name()));
        }
        assert_eq!(factory("westwood:iw=4").unwrap().build().congestion_window(), 4.0);
        for bad in [
            "scalable:b=1",
            "scalable:a=0",
            "cubic:beta=0",
            "cubic:beta=1",
            "bic:smin=64",
            "highspeed:high_window=30",
            "highspeed:high_p=0.01",
            "westwood:alpha=1",
        ] {
            assert!(factory(bad).is_err(), "{bad} accepted");
        }
        assert!(factory("bic:smin=64").unwrap_err().0.contains("smax"));
    }
}
