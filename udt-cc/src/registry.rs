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

use crate::params::CcParams;
pub use crate::params::ParamInfo;
use crate::spec::{CcSpec, CcSpecError};
use crate::tables::*;
pub use crate::tables::{tcp_config, TCP_PARAMS};
use crate::CcFactory;

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

/// The built-in algorithms.
static CATALOG: &[CcInfo] = &[
    CcInfo {
        name: "copa",
        aliases: &["default"],
        summary: "the default: Copa, a rate toward 1/(delta x queueing delay) with a velocity; TCP-competitive mode while a queue never empties",
        reference: "Arun & Balakrishnan, NSDI 2018",
        tcp_like: false,
        both_ends: false,
        params: &COPA_PARAMS,
        build: build_copa,
    },
    CcInfo {
        name: "model",
        aliases: &["udt"],
        summary: "model-based pacing at the measured bandwidth (BBR's structure on UDT's signals); the default's controller toward a UDT4 receiver",
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
pub const DEFAULT_CC: &str = "copa";

/// A factory for [`DEFAULT_CC`].
pub fn default_factory() -> Arc<dyn CcFactory> {
    factory(DEFAULT_CC).expect("the default specification is in the catalog")
}

/// Where docs/congestion-control.md's generated parameter tables begin.
pub const BEGIN: &str = "<!-- generated by `udt cc list --markdown`: begin -->";
/// Where they end.
pub const END: &str = "<!-- generated by `udt cc list --markdown`: end -->";

/// The parameter tables of the catalog as Markdown, one table per algorithm that takes any (the
/// tables of docs/congestion-control.md; `udt cc list --markdown` prints them).
pub fn markdown() -> String {
    let mut out = String::new();
    for info in catalog() {
        if info.params.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "**{}**\n\n| key | default | values | unit | meaning |\n| --- | --- | --- | --- | --- |\n",
            info.name
        ));
        for p in info.params {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                p.key,
                p.default_text(),
                p.range_text(),
                p.unit,
                p.doc
            ));
        }
        out.push('\n');
    }
    out
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
        assert!(factory("udt:noisy=true").is_err(), "the model controller has no DAIMD options");
        assert!(factory("udt:standing=1").is_err() && factory("udt:beta=0").is_err());
        assert!(factory("udt:cruise=200,inc=0.1").is_ok());
        assert!(factory("udt:cruise=0").is_err() && factory("udt:inc=1").is_err());
        assert_eq!(factory("default").unwrap().build().name(), "copa");
        assert_eq!(factory("udt").unwrap().build().name(), "model");
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

    #[test]
    fn the_documentation_shows_the_table() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/congestion-control.md"))
                .expect("docs/congestion-control.md");
        let begin = doc.find(BEGIN).expect("the begin marker") + BEGIN.len();
        let end = doc.find(END).expect("the end marker");
        assert!(
            doc[begin..end].trim() == markdown().trim(),
            "docs/congestion-control.md's parameter tables differ from the table: regenerate them \
             between the markers with `udt cc list --markdown`"
        );
    }
}
