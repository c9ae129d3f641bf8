//! Congestion-control specifications as users write them: `NAME[:key=value,...]`.
//!
//! A [`CcSpec`] is parsed once (from a command line, a config file or code) and handed to the
//! [registry](super::registry), which looks the name up and lets the algorithm take its
//! parameters from a [`CcParams`](crate::params::CcParams), checked against its parameter
//! table. Every key must be taken, so a misspelt parameter is an error, never silently ignored.
//!
//! Invariants: names and keys are lowercase ASCII after parsing; a key appears at most once.

use std::fmt;

/// A parsed `NAME[:key=value,...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcSpec {
    /// Algorithm name (lowercase).
    pub name: String,
    /// `(key, value)` pairs in the order given (keys lowercase).
    pub params: Vec<(String, String)>,
}

/// Why a specification was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcSpecError(pub String);

impl fmt::Display for CcSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CcSpecError {}

pub(crate) fn err(msg: impl Into<String>) -> CcSpecError {
    CcSpecError(msg.into())
}

impl CcSpec {
    /// Parse `NAME[:key=value,...]`; whitespace around items is ignored.
    pub fn parse(text: &str) -> Result<Self, CcSpecError> {
        let text = text.trim();
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n.trim(), Some(r)),
            None => (text, None),
        };
        if name.is_empty() {
            return Err(err(format!("congestion control {text:?}: no algorithm name")));
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(err(format!("congestion control name {name:?}: letters, digits, '-' and '_' only")));
        }
        let mut params: Vec<(String, String)> = Vec::new();
        for item in rest.into_iter().flat_map(|r| r.split(',')) {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let Some((k, v)) = item.split_once('=') else {
                return Err(err(format!("{name}: parameter {item:?} is not key=value")));
            };
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k.is_empty() || v.is_empty() {
                return Err(err(format!("{name}: parameter {item:?} needs a key and a value")));
            }
            if params.iter().any(|(have, _)| *have == k) {
                return Err(err(format!("{name}: parameter {k:?} given twice")));
            }
            params.push((k, v.to_string()));
        }
        Ok(CcSpec { name: name.to_ascii_lowercase(), params })
    }
}

impl fmt::Display for CcSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.params.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
        }
        Ok(())
    }
}

/// A rate in bits per second in the grammar every `udt` command shares
/// ([`udt_units::parse_rate`]): `500m` -> 500,000,000; `1.5g`, `100k`, `250000`, `100mbit`,
/// `1gbps`, `10MB/s` (bytes per second); `None` for anything else.
pub fn parse_rate(text: &str) -> Option<u64> {
    udt_units::parse_rate(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_parameters() {
        let s = CcSpec::parse(" CUBIC : beta=0.7, c=0.4 ").unwrap();
        assert_eq!(s.name, "cubic");
        assert_eq!(s.params, vec![("beta".into(), "0.7".into()), ("c".into(), "0.4".into())]);
        assert_eq!(s.to_string(), "cubic:beta=0.7,c=0.4");
        assert_eq!(CcSpec::parse("udt").unwrap().params, vec![]);
        assert_eq!(CcSpec::parse("udt:").unwrap().to_string(), "udt");
    }

    #[test]
    fn refuses_malformed_specs() {
        for bad in ["", ":a=1", "cubic:beta", "cubic:=1", "cubic:beta=", "cu bic", "x:a=1,a=2"] {
            assert!(CcSpec::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100m"), Some(100_000_000));
        assert_eq!(parse_rate("100mbit"), Some(100_000_000));
        assert_eq!(parse_rate("2.5Gbps"), Some(2_500_000_000));
        assert_eq!(parse_rate("64k"), Some(64_000));
        assert_eq!(parse_rate("1200"), Some(1200));
        assert_eq!(parse_rate("10mbps"), Some(10_000_000));
        assert_eq!(parse_rate("10MB/s"), Some(80_000_000));
        assert_eq!(parse_rate("100MB"), None);
        assert_eq!(parse_rate("fast"), None);
        assert_eq!(parse_rate("-1m"), None);
        assert_eq!(parse_rate(""), None);
    }
}
