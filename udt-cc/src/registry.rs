//! Congestion control by name: the catalog of built-in algorithms and the factory lookup behind
//! `--cc NAME[:key=value,...]` and [`Config::with_cc`](udt_proto::connection::Config).
//!
//! Each [`CcInfo`] names an algorithm, documents its parameters and builds a [`CcFactory`] from a
//! [`CcParams`]. [`factory`] parses a specification, finds the entry by name or alias, lets it take
//! its parameters and refuses any it did not take.
//!
//! Invariants: names and aliases are unique across the catalog and lowercase; every parameter an
//! entry reads is listed in its `params` (checked by a test for every entry).

use std::sync::Arc;

use super::spec::{CcParams, CcSpec, CcSpecError};
use super::tcp::{TcpConfig, TcpFactory};
use super::{BlastFactory, CcFactory, NativeConfig, NativeFactory};
use crate::bbr::{BbrConfig, BbrFactory};
use crate::bic::{Bic, BicConfig};
use crate::cubic::{Cubic, CubicConfig};
use crate::fast::{Fast, FastConfig};
use crate::gtp::{GtpConfig, GtpFactory, ManagerConfig};
use crate::highspeed::HighSpeed;
use crate::model::{ModelConfig, ModelFactory};
use crate::newreno::NewReno;
use crate::scalable::Scalable;
use crate::vegas::{Vegas, VegasConfig};
use crate::westwood::Westwood;

/// One documented parameter of an algorithm.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    /// Key, as written after the colon.
    pub key: &'static str,
    /// Default value, as text.
    pub default: &'static str,
    /// What it does.
    pub doc: &'static str,
}

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

/// The parameters every TCP variant takes.
pub const TCP_PARAMS: [ParamInfo; 2] = [
    ParamInfo { key: "ack", default: "2", doc: "receiver acknowledges every N packets (1-64)" },
    ParamInfo { key: "iw", default: "2", doc: "initial window, packets" },
];

/// Read the shared TCP parameters.
pub fn tcp_config(p: &mut CcParams) -> Result<TcpConfig, CcSpecError> {
    let d = TcpConfig::default();
    Ok(TcpConfig {
        ack_every: p.u64("ack", u64::from(d.ack_every), 1, 64)? as u32,
        initial_window: p.f64("iw", d.initial_window, 1.0, 1e6)?,
    })
}

fn build_model(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let d = ModelConfig::default();
    let config = ModelConfig {
        startup_gain: p.f64("startup_gain", d.startup_gain, 1.01, 10.0)?,
        cwnd_gain: p.f64("cwnd_gain", d.cwnd_gain, 1.0, 10.0)?,
        loss_threshold: fraction(p, "udt", "loss", d.loss_threshold)?,
        loss_beta: fraction(p, "udt", "beta", d.loss_beta)?,
        oversubscribed_beta: fraction(p, "udt", "os_beta", d.oversubscribed_beta)?,
        initial_window: p.f64("iw", d.initial_window, 2.0, 1e6)?,
        cruise_syn: {
            let lo = p.u64("cruise", u64::from(d.cruise_syn.0), 1, 100_000)? as u32;
            (lo, lo * 2)
        },
        cap_increase: fraction(p, "udt", "inc", d.cap_increase)?,
        ..d
    };
    config.validate().map_err(|e| CcSpecError(format!("udt: {e}")))?;
    Ok(Arc::new(ModelFactory(config)))
}

fn build_daimd(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let d = NativeConfig::default();
    Ok(Arc::new(NativeFactory(NativeConfig {
        noisy_link: p.bool("noisy", d.noisy_link)?,
        freeze_on_congestion: p.bool("freeze", d.freeze_on_congestion)?,
        rate_correction: p.bool("rc", d.rate_correction)?,
        initial_window: p.f64("iw", d.initial_window, 2.0, 1e6)?,
    })))
}

fn build_blast(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(BlastFactory::new(p.bits_per_sec("rate", 0)?)))
}

fn build_newreno(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(TcpFactory::new(tcp_config(p)?, NewReno)))
}

fn build_gtp(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let d = GtpConfig::default();
    let capacity = p.bits_per_sec("capacity", d.manager.capacity)?;
    if capacity == 0 {
        return Err(CcSpecError("gtp: capacity must be positive".into()));
    }
    let interval_ms = p.u64("interval", 0, 0, 60_000)?;
    Ok(Arc::new(GtpFactory::new(GtpConfig {
        manager: ManagerConfig {
            capacity,
            headroom: p.f64("headroom", d.manager.headroom, 0.01, 1.0)?,
            loss_threshold: p.f64("loss", d.manager.loss_threshold, 0.0, 1.0)?,
            idle: std::time::Duration::from_millis(p.u64(
                "idle",
                d.manager.idle.as_millis() as u64,
                1,
                3_600_000,
            )?),
        },
        initial_rate: p.bits_per_sec("init", d.initial_rate)?,
        request: p.bits_per_sec("request", d.request)?,
        interval: (interval_ms > 0).then(|| std::time::Duration::from_millis(interval_ms)),
    })))
}

static VEGAS_PARAMS: [ParamInfo; 5] = [
    TCP_PARAMS[0],
    TCP_PARAMS[1],
    ParamInfo { key: "alpha", default: "2", doc: "grow by 1 per RTT below this many packets queued" },
    ParamInfo { key: "beta", default: "4", doc: "shrink by 1 per RTT above this many packets queued" },
    ParamInfo { key: "gamma", default: "1", doc: "leave slow start above this many packets queued" },
];

fn build_vegas(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let config = tcp_config(p)?;
    let d = VegasConfig::default();
    let alpha = p.f64("alpha", d.alpha, 0.0, 1e6)?;
    let beta = p.f64("beta", d.beta, alpha, 1e6)?;
    let gamma = p.f64("gamma", d.gamma, 0.0, 1e6)?;
    Ok(Arc::new(TcpFactory::new(config, Vegas::new(VegasConfig { alpha, beta, gamma }))))
}

static FAST_PARAMS: [ParamInfo; 4] = [
    TCP_PARAMS[0],
    TCP_PARAMS[1],
    ParamInfo { key: "alpha", default: "200", doc: "packets kept queued at the bottleneck" },
    ParamInfo { key: "gamma", default: "0.5", doc: "update smoothing, 0-1" },
];

fn build_fast(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let config = tcp_config(p)?;
    let d = FastConfig::default();
    let alpha = p.f64("alpha", d.alpha, 1.0, 1e6)?;
    let gamma = p.f64("gamma", d.gamma, 0.01, 1.0)?;
    Ok(Arc::new(TcpFactory::new(config, Fast::new(FastConfig { alpha, gamma }))))
}

static BBR_PARAMS: [ParamInfo; 4] = [
    ParamInfo { key: "startup_gain", default: "2.885", doc: "Startup pacing and window gain (2/ln 2)" },
    ParamInfo { key: "cwnd_gain", default: "2", doc: "ProbeBW window gain, times the BDP" },
    ParamInfo { key: "probe_rtt_ms", default: "200", doc: "ProbeRTT duration, milliseconds" },
    ParamInfo { key: "iw", default: "10", doc: "initial window, packets" },
];

fn build_bbr(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let d = BbrConfig::default();
    Ok(Arc::new(BbrFactory(BbrConfig {
        startup_gain: p.f64("startup_gain", d.startup_gain, 1.0, 10.0)?,
        cwnd_gain: p.f64("cwnd_gain", d.cwnd_gain, 1.0, 10.0)?,
        probe_rtt: std::time::Duration::from_millis(p.u64("probe_rtt_ms", 200, 1, 10_000)?),
        initial_window: p.f64("iw", d.initial_window, 1.0, 1e6)?,
    })))
}

/// A number strictly between 0 and 1.
fn fraction(p: &mut CcParams, algorithm: &str, key: &str, default: f64) -> Result<f64, CcSpecError> {
    let v = p.f64(key, default, 0.0, 1.0)?;
    if v <= 0.0 || v >= 1.0 {
        return Err(CcSpecError(format!("{algorithm}: {key}={v} must be strictly between 0 and 1")));
    }
    Ok(v)
}

fn build_scalable(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let tcp = tcp_config(p)?;
    let d = Scalable::default();
    let a = p.f64("a", d.a, 1e-6, 1.0)?;
    let b = fraction(p, "scalable", "b", d.b)?;
    let lwnd = p.f64("lwnd", d.lwnd, 0.0, 1e6)?;
    Ok(Arc::new(TcpFactory::new(tcp, Scalable { a, b, lwnd })))
}

fn build_highspeed(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let tcp = tcp_config(p)?;
    let d = HighSpeed::default();
    let h = HighSpeed {
        low_window: p.f64("low_window", d.low_window, 2.0, 1e6)?,
        high_window: p.f64("high_window", d.high_window, 2.0, 1e9)?,
        high_p: p.f64("high_p", d.high_p, 1e-15, 1.0)?,
        high_decrease: p.f64("high_decrease", d.high_decrease, 0.001, 0.5)?,
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

fn build_bic(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let tcp = tcp_config(p)?;
    let d = BicConfig::default();
    let c = BicConfig {
        smax: p.f64("smax", d.smax, 1.0, 1e6)?,
        smin: p.f64("smin", d.smin, 1e-6, 1e6)?,
        beta: fraction(p, "bic", "beta", d.beta)?,
        low_window: p.f64("low_window", d.low_window, 0.0, 1e6)?,
        fast_convergence: p.bool("fast_convergence", d.fast_convergence)?,
    };
    if c.smin > c.smax {
        return Err(CcSpecError(format!("bic: smin={} must not exceed smax={}", c.smin, c.smax)));
    }
    Ok(Arc::new(TcpFactory::new(tcp, Bic::new(c))))
}

fn build_westwood(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    Ok(Arc::new(TcpFactory::new(tcp_config(p)?, Westwood::default())))
}

fn build_cubic(p: &mut CcParams) -> Result<Arc<dyn CcFactory>, CcSpecError> {
    let tcp = tcp_config(p)?;
    let d = CubicConfig::default();
    let c = CubicConfig {
        c: p.f64("c", d.c, 1e-3, 1e3)?,
        beta: fraction(p, "cubic", "beta", d.beta)?,
        fast_convergence: p.bool("fast_convergence", d.fast_convergence)?,
        tcp_friendly: p.bool("tcp_friendly", d.tcp_friendly)?,
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
        params: &[
            ParamInfo { key: "startup_gain", default: "2.885", doc: "Startup pacing gain, x bandwidth" },
            ParamInfo { key: "cwnd_gain", default: "2", doc: "window on packets in flight, x BDP" },
            ParamInfo {
                key: "loss",
                default: "0.05",
                doc: "lost fraction of a loss window that means congestion",
            },
            ParamInfo {
                key: "beta",
                default: "0.7",
                doc: "rate kept per congested loss window while cruising",
            },
            ParamInfo {
                key: "os_beta",
                default: "0.85",
                doc: "rate kept when losses while cruising stop in the probe's down phase (an over-subscribed queue)",
            },
            ParamInfo {
                key: "cruise",
                default: "32",
                doc: "ACK periods between bandwidth probes, at least (drawn from N to 2N); more is gentler on TCP, slower to converge",
            },
            ParamInfo {
                key: "inc",
                default: "0.0625",
                doc: "loss bound raised per probe cycle without congestion, x link capacity",
            },
            ParamInfo {
                key: "iw",
                default: "16",
                doc: "packets per initial RTT before the first rate sample",
            },
        ],
        build: build_model,
    },
    CcInfo {
        name: "daimd",
        aliases: &["thesis", "native", "udt4"],
        summary: "the thesis' DAIMD rate control with packet-pair bandwidth estimation (UDT4 4.11 CUDTCC)",
        reference: "thesis §2.2.5, ch. 3; UDT4 4.11 CUDTCC",
        tcp_like: false,
        both_ends: false,
        params: &[
            ParamInfo { key: "noisy", default: "false", doc: "ignore the first loss of each event" },
            ParamInfo { key: "freeze", default: "false", doc: "stop sending one SYN after a decrease" },
            ParamInfo { key: "rc", default: "false", doc: "correct the period with the measured one" },
            ParamInfo { key: "iw", default: "16", doc: "initial window, packets" },
        ],
        build: build_daimd,
    },
    CcInfo {
        name: "blast",
        aliases: &["udpblast", "fixed"],
        summary: "UDP blast: a fixed sending rate, changeable at run time, no reaction to loss",
        reference: "thesis §5.3.1, UDT4 demo CUDPBlast",
        tcp_like: false,
        both_ends: false,
        params: &[ParamInfo { key: "rate", default: "0", doc: "bits/s (k, m, g suffixes); 0 = unlimited" }],
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
        params: &[
            ParamInfo {
                key: "capacity",
                default: "1g",
                doc: "receiver capacity shared by the group, bits/s",
            },
            ParamInfo { key: "init", default: "10m", doc: "sending rate until the first allocation, bits/s" },
            ParamInfo { key: "request", default: "0", doc: "sender's rate request, bits/s; 0 = none" },
            ParamInfo { key: "interval", default: "0", doc: "control interval, ms; 0 = max(SYN, RTT)" },
            ParamInfo { key: "headroom", default: "0.1", doc: "extra share for a flow using less (0.01-1)" },
            ParamInfo {
                key: "loss",
                default: "0.01",
                doc: "loss fraction capping a flow at its arrival rate",
            },
            ParamInfo { key: "idle", default: "500", doc: "drop a flow silent this long, ms" },
        ],
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
        params: &[
            TCP_PARAMS[0],
            TCP_PARAMS[1],
            ParamInfo { key: "a", default: "0.01", doc: "increase per ACKed packet (thesis table: 0.1)" },
            ParamInfo { key: "b", default: "0.125", doc: "fraction of the window removed per loss" },
            ParamInfo { key: "lwnd", default: "16", doc: "legacy window: Reno at or below it, packets" },
        ],
        build: build_scalable,
    },
    CcInfo {
        name: "highspeed",
        aliases: &["hstcp"],
        summary: "HighSpeed TCP: AIMD with a(w), b(w) from the response function 0.12/p^0.835",
        reference: "thesis Table 3-1; RFC 3649",
        tcp_like: true,
        both_ends: false,
        params: &[
            TCP_PARAMS[0],
            TCP_PARAMS[1],
            ParamInfo { key: "low_window", default: "38", doc: "Reno at or below it, packets" },
            ParamInfo { key: "high_window", default: "83000", doc: "window reached at high_p, packets" },
            ParamInfo { key: "high_p", default: "1e-7", doc: "loss rate at high_window" },
            ParamInfo { key: "high_decrease", default: "0.1", doc: "b(high_window)" },
        ],
        build: build_highspeed,
    },
    CcInfo {
        name: "bic",
        aliases: &["bictcp"],
        summary: "BiC TCP: binary search towards the last loss window, additive steps up to Smax",
        reference: "thesis Table 3-1; Xu, Harfoush, Rhee, INFOCOM 2004",
        tcp_like: true,
        both_ends: false,
        params: &[
            TCP_PARAMS[0],
            TCP_PARAMS[1],
            ParamInfo { key: "smax", default: "32", doc: "largest increase per RTT, packets" },
            ParamInfo { key: "smin", default: "0.01", doc: "smallest increase per RTT, packets" },
            ParamInfo { key: "beta", default: "0.125", doc: "fraction of the window removed per loss" },
            ParamInfo { key: "low_window", default: "14", doc: "Reno at or below it, packets" },
            ParamInfo { key: "fast_convergence", default: "true", doc: "lower w_max on an early loss" },
        ],
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
        params: &[
            TCP_PARAMS[0],
            TCP_PARAMS[1],
            ParamInfo { key: "c", default: "0.4", doc: "C, packets/s^3" },
            ParamInfo { key: "beta", default: "0.7", doc: "window kept on a loss event" },
            ParamInfo { key: "fast_convergence", default: "true", doc: "lower W_max on an early loss" },
            ParamInfo { key: "tcp_friendly", default: "true", doc: "at least Reno's rate (W_est)" },
        ],
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
    let mut params = CcParams::new(spec);
    let factory = (info.build)(&mut params)?;
    let known: Vec<&str> = info.params.iter().map(|p| p.key).collect();
    params.finish(&known)?;
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
                let spec = format!("{}:{}={}", info.name, p.key, p.default);
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
