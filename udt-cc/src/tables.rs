//! The catalog's parameter tables, one per algorithm, and how each algorithm builds its
//! factory from the values taken through them ([`crate::registry`] lists the algorithms).
//!
//! Invariants: a build function reads only keys of its own table, through the typed getters of
//! [`CcParams`], which check kind and range; checks across parameters (Vegas' beta at least
//! alpha, HighSpeed's windows, BiC's steps, GTP's capacity) are made here, once.

use std::sync::Arc;
use std::time::Duration;

use crate::bbr::{BbrConfig, BbrFactory};
use crate::bic::{Bic, BicConfig};
use crate::copa::{CopaConfig, CopaFactory};
use crate::cubic::{Cubic, CubicConfig};
use crate::fast::{Fast, FastConfig};
use crate::gtp::{GtpConfig, GtpFactory, ManagerConfig};
use crate::highspeed::HighSpeed;
use crate::model::{ModelConfig, ModelFactory};
use crate::newreno::NewReno;
use crate::params::CcParams;
use crate::params::ParamInfo;
use crate::params::{Kind, Value};
use crate::scalable::Scalable;
use crate::spec::CcSpecError;
use crate::tcp::{TcpConfig, TcpFactory};
use crate::vegas::{Vegas, VegasConfig};
use crate::westwood::Westwood;
use crate::{BlastFactory, CcFactory, NativeConfig, NativeFactory};

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

pub(crate) static MODEL_PARAMS: [ParamInfo; 8] = [
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
        key: "standing",
        kind: Kind::Fraction,
        unit: "x peak queue",
        default: || Value::Real(ModelConfig::default().standing_queue),
        doc: "a loss is congestion when the last round's standing queue reaches this fraction of the recent deepest one",
    },
    ParamInfo {
        key: "floor",
        kind: Kind::Fraction,
        unit: "x min RTT",
        default: || Value::Real(ModelConfig::default().queue_floor),
        doc: "a queue shorter than this never stands (jitter)",
    },
    ParamInfo {
        key: "beta",
        kind: Kind::Fraction,
        unit: "",
        default: || Value::Real(ModelConfig::default().loss_beta),
        doc: "rate kept per congested loss window while cruising",
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

pub(crate) fn build_model(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let config = ModelConfig {
        startup_gain: p.real("startup_gain")?,
        cwnd_gain: p.real("cwnd_gain")?,
        standing_queue: p.real("standing")?,
        queue_floor: p.real("floor")?,
        loss_beta: p.real("beta")?,
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

pub(crate) static DAIMD_PARAMS: [ParamInfo; 4] = [
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

pub(crate) fn build_daimd(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(NativeFactory(NativeConfig {
        noisy_link: p.switch("noisy")?,
        freeze_on_congestion: p.switch("freeze")?,
        rate_correction: p.switch("rc")?,
        initial_window: p.real("iw")?,
    })))
}

pub(crate) static BLAST_PARAMS: [ParamInfo; 1] = [ParamInfo {
    key: "rate",
    kind: Kind::Rate,
    unit: "bits/s",
    default: || Value::Rate(0),
    doc: "sending rate; 0 = unlimited",
}];

pub(crate) fn build_blast(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(BlastFactory::new(p.rate("rate")?)))
}

pub(crate) fn build_newreno(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(TcpFactory::new(tcp_config(p)?, NewReno)))
}

pub(crate) static GTP_PARAMS: [ParamInfo; 7] = [
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

pub(crate) fn build_gtp(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
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

pub(crate) static VEGAS_PARAMS: [ParamInfo; 5] = [
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

pub(crate) fn build_vegas(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let config = tcp_config(p)?;
    let (alpha, beta, gamma) = (p.real("alpha")?, p.real("beta")?, p.real("gamma")?);
    if beta < alpha {
        return Err(CcSpecError(format!("vegas: beta={beta} must not be below alpha={alpha}")));
    }
    Ok(Arc::new(TcpFactory::new(config, Vegas::new(VegasConfig { alpha, beta, gamma }))))
}

pub(crate) static FAST_PARAMS: [ParamInfo; 4] = [
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

pub(crate) fn build_fast(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let config = tcp_config(p)?;
    let fast = FastConfig { alpha: p.real("alpha")?, gamma: p.real("gamma")? };
    Ok(Arc::new(TcpFactory::new(config, Fast::new(fast))))
}

pub(crate) static COPA_PARAMS: [ParamInfo; 2] = [
    ParamInfo {
        key: "delta",
        kind: real(0.01, 10.0),
        unit: "1/packets",
        default: || Value::Real(CopaConfig::default().delta),
        doc: "delta of the default mode: the flow keeps 1/delta packets queued",
    },
    ParamInfo {
        key: "iw",
        kind: real(1.0, 1e6),
        unit: "packets",
        default: || Value::Real(CopaConfig::default().initial_window),
        doc: "packets of the first round",
    },
];

pub(crate) fn build_copa(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(CopaFactory(CopaConfig { delta: p.real("delta")?, initial_window: p.real("iw")? })))
}

pub(crate) static BBR_PARAMS: [ParamInfo; 4] = [
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

pub(crate) fn build_bbr(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(BbrFactory(BbrConfig {
        startup_gain: p.real("startup_gain")?,
        cwnd_gain: p.real("cwnd_gain")?,
        probe_rtt: Duration::from_millis(p.whole("probe_rtt_ms")?),
        initial_window: p.real("iw")?,
    })))
}

pub(crate) static SCALABLE_PARAMS: [ParamInfo; 5] = [
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

pub(crate) fn build_scalable(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let tcp = tcp_config(p)?;
    let s = Scalable { a: p.real("a")?, b: p.real("b")?, lwnd: p.real("lwnd")? };
    Ok(Arc::new(TcpFactory::new(tcp, s)))
}

pub(crate) static HIGHSPEED_PARAMS: [ParamInfo; 6] = [
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

pub(crate) fn build_highspeed(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
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

pub(crate) static BIC_PARAMS: [ParamInfo; 7] = [
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

pub(crate) fn build_bic(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
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

pub(crate) fn build_westwood(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(TcpFactory::new(tcp_config(p)?, Westwood::default())))
}

pub(crate) static CUBIC_PARAMS: [ParamInfo; 6] = [
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

pub(crate) fn build_cubic(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let tcp = tcp_config(p)?;
    let c = CubicConfig {
        c: p.real("c")?,
        beta: p.real("beta")?,
        fast_convergence: p.switch("fast_convergence")?,
        tcp_friendly: p.switch("tcp_friendly")?,
    };
    Ok(Arc::new(TcpFactory::new(tcp, Cubic::new(c))))
}
