//! What `--systems` names: the protocols under test, each parsed from one word.
//!
//! Invariant: a [`System`] that parsed is runnable as far as arguments go (a `udt:CC` name was
//! checked against the congestion-control catalog, a `tcp-NAME` is a kernel module name the
//! kernel may or may not have, which only the run can tell).

use std::fmt;

use crate::bulk::Protocol;
use crate::net;

/// One protocol under test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum System {
    /// Our UDT through `udt perf`, with its default congestion control or the one named.
    Udt {
        /// `--cc` given to both ends, `None` for the default (native UDT).
        cc: Option<String>,
    },
    /// Our UDT moving a file with `udt send` / `udt recv` (BLAKE3-verified), file to file.
    UdtFile,
    /// The reference UDT4 through `interop/build/udt4_perf`.
    Udt4,
    /// Kernel TCP through iperf3 with this congestion control (`-C NAME`).
    Tcp {
        /// The kernel's name for it: cubic, bbr, reno.
        cc: String,
    },
    /// Raw UDP through iperf3 at the link rate: a ceiling with no reliability.
    Udp,
    /// Our Tsunami, RBUDP or FOBS through `udt serve` / `udt fetch`, file to file.
    Seed(Protocol),
    /// The original Tsunami UDP or RBUDP programs (interop/seed-peers.sh), file to file.
    SeedRef(Protocol),
}

impl System {
    /// The default `--systems` list. `udt:cubic` is not checked against the catalog (a build
    /// without our CUBIC shows it as skipped); names given on the command line are.
    pub const DEFAULT: &'static str = "udt,udt:cubic,udt4,tcp-cubic,tcp-bbr,udp";

    /// The default systems.
    pub fn defaults() -> Vec<System> {
        Self::DEFAULT.split(',').filter_map(|s| Self::parse_unchecked(s).ok()).collect()
    }

    /// Why this build cannot run it, when a `udt:CC` names a controller it lacks.
    pub fn unsupported(&self) -> Option<String> {
        match self {
            System::Udt { cc: Some(cc) } => {
                net::parse_cc(cc).err().map(|e| format!("this build has no such congestion control: {e}"))
            }
            _ => None,
        }
    }

    /// Parses one name: `udt`, `udt:CC[:k=v]`, `udt-file`, `udt4`, `tcp-cubic`, `tcp-bbr`,
    /// `tcp-reno`, `udp`, `tsunami`, `rbudp`, `fobs`, `tsunami-ref`, `rbudp-ref`.
    pub fn parse(s: &str) -> Result<System, String> {
        let system = Self::parse_unchecked(s)?;
        match system.unsupported() {
            Some(e) => Err(e),
            None => Ok(system),
        }
    }

    /// [`System::parse`] without checking a `udt:CC` against the catalog.
    fn parse_unchecked(s: &str) -> Result<System, String> {
        let s = s.trim();
        match s {
            "udt" => return Ok(System::Udt { cc: None }),
            "udt-file" => return Ok(System::UdtFile),
            "udt4" => return Ok(System::Udt4),
            "udp" => return Ok(System::Udp),
            "tsunami" => return Ok(System::Seed(Protocol::Tsunami)),
            "rbudp" => return Ok(System::Seed(Protocol::Rbudp)),
            "fobs" => return Ok(System::Seed(Protocol::Fobs)),
            "tsunami-ref" => return Ok(System::SeedRef(Protocol::Tsunami)),
            "rbudp-ref" => return Ok(System::SeedRef(Protocol::Rbudp)),
            _ => {}
        }
        if let Some(cc) = s.strip_prefix("udt:") {
            return Ok(System::Udt { cc: Some(cc.to_string()) });
        }
        if let Some(cc) = s.strip_prefix("tcp-") {
            if !cc.is_empty() && cc.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Ok(System::Tcp { cc: cc.to_string() });
            }
        }
        Err(format!(
            "unknown system `{s}`: use udt, udt:CC (see `udt cc list`), udt-file, udt4, tcp-cubic, tcp-bbr, \
             tcp-reno, udp, tsunami, rbudp, fobs, tsunami-ref or rbudp-ref"
        ))
    }
}

impl fmt::Display for System {
    /// The name as `--systems` takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            System::Udt { cc: None } => write!(f, "udt"),
            System::Udt { cc: Some(cc) } => write!(f, "udt:{cc}"),
            System::UdtFile => write!(f, "udt-file"),
            System::Udt4 => write!(f, "udt4"),
            System::Tcp { cc } => write!(f, "tcp-{cc}"),
            System::Udp => write!(f, "udp"),
            System::Seed(p) => write!(f, "{}", p.name()),
            System::SeedRef(p) => write!(f, "{}-ref", p.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(System::defaults().len(), 6);
        let seed = ["tsunami", "rbudp", "fobs", "tsunami-ref", "rbudp-ref"];
        for name in
            System::DEFAULT.split(',').chain(["udt-file", "tcp-reno", "udt:blast:rate=50mbit"]).chain(seed)
        {
            let s = System::parse_unchecked(name).unwrap();
            assert_eq!(s.to_string(), name);
        }
        assert!(System::parse("tcp-").is_err());
        assert!(System::parse("udt:nosuchcc").is_err());
        assert!(System::parse("sctp").is_err());
    }
}
