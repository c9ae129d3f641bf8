//! Congestion-control specifications as users write them: `NAME[:key=value,...]`.
//!
//! A [`CcSpec`] is parsed once (from a command line, a config file or code) and handed to the
//! [registry](super::registry), which looks the name up and lets the algorithm take its
//! parameters from a [`CcParams`], checked against its parameter table ([`crate::params`]).
//! Every key must be taken: [`CcParams::finish`] rejects any key the algorithm did not ask for,
//! so a misspelt parameter is an error, never silently ignored.
//!
//! Invariants: names and keys are lowercase ASCII after parsing; a key appears at most once.

use std::fmt;

use crate::params::ParamInfo;

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

fn err(msg: impl Into<String>) -> CcSpecError {
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

/// The parameters of one specification, taken one by one, through the algorithm's parameter
/// table ([`crate::params`]), by the algorithm that builds from it.
#[derive(Debug)]
pub struct CcParams {
    algorithm: String,
    table: &'static [ParamInfo],
    pending: Vec<(String, String)>,
}

impl CcParams {
    /// The parameters of `spec`, for an algorithm whose parameters are `table`.
    pub fn new(spec: &CcSpec, table: &'static [ParamInfo]) -> Self {
        CcParams { algorithm: spec.name.clone(), table, pending: spec.params.clone() }
    }

    /// The algorithm's name as given.
    pub fn algorithm(&self) -> &str {
        &self.algorithm
    }

    /// The algorithm's parameter table.
    pub fn table(&self) -> &'static [ParamInfo] {
        self.table
    }

    pub(crate) fn take_raw(&mut self, key: &str) -> Option<String> {
        let i = self.pending.iter().position(|(k, _)| k == key)?;
        Some(self.pending.remove(i).1)
    }

    /// Check that every parameter given was taken; the error names the first unknown key.
    pub fn finish(self) -> Result<(), CcSpecError> {
        let known: Vec<&str> = self.table.iter().map(|p| p.key).collect();
        match self.pending.first() {
            None => Ok(()),
            Some((k, _)) if known.is_empty() => {
                Err(err(format!("{} takes no parameters (got {k:?})", self.algorithm)))
            }
            Some((k, _)) => {
                Err(err(format!("{}: unknown parameter {k:?} (known: {})", self.algorithm, known.join(", "))))
            }
        }
    }
}

/// `500m` -> 500,000,000; `1.5g`, `100k`, `250000`, `100mbit`, `1gbps`, `10m/s`.
pub fn parse_rate(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let t = ["bit/s", "b/s", "bps", "bit"].iter().find_map(|s| t.strip_suffix(s)).unwrap_or(&t);
    let (num, mult) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 1e3),
        'm' => (&t[..t.len() - 1], 1e6),
        'g' => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    let v: f64 = num.trim().parse().ok()?;
    let bits = v * mult;
    (bits.is_finite() && (0.0..1e15).contains(&bits)).then_some(bits.round() as u64)
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
    fn typed_getters_check_the_table_and_leftovers() {
        use crate::params::{Kind, Value};
        static TABLE: [ParamInfo; 5] = [
            ParamInfo { key: "a", kind: Kind::Fraction, unit: "", default: || Value::Real(0.25), doc: "" },
            ParamInfo {
                key: "b",
                kind: Kind::Real { min: 0.0, max: 1.0 },
                unit: "",
                default: || Value::Real(1.0),
                doc: "",
            },
            ParamInfo {
                key: "n",
                kind: Kind::Whole { min: 1, max: 10 },
                unit: "",
                default: || Value::Whole(1),
                doc: "",
            },
            ParamInfo { key: "on", kind: Kind::Switch, unit: "", default: || Value::Switch(false), doc: "" },
            ParamInfo { key: "r", kind: Kind::Rate, unit: "bits/s", default: || Value::Rate(0), doc: "" },
        ];
        let spec = CcSpec::parse("x:a=0.5,n=3,on=yes,r=1.5g").unwrap();
        let mut p = CcParams::new(&spec, &TABLE);
        assert_eq!(p.real("a").unwrap(), 0.5);
        assert_eq!(p.real("b").unwrap(), 1.0, "absent: the default");
        assert_eq!(p.whole("n").unwrap(), 3);
        assert!(p.switch("on").unwrap());
        assert_eq!(p.rate("r").unwrap(), 1_500_000_000);
        assert!(p.real("n").is_err(), "a whole number read as a real");
        assert!(p.real("nope").is_err(), "not in the table");
        p.finish().unwrap();

        let spec = CcSpec::parse("x:b=2,typo=1").unwrap();
        let mut p = CcParams::new(&spec, &TABLE);
        assert!(p.real("b").unwrap_err().0.contains("outside"));
        let e = p.finish().unwrap_err();
        assert!(e.0.contains("typo"), "{e}");
        for bad in ["x:b=nan", "x:a=1", "x:a=0", "x:n=0", "x:n=1.5", "x:on=maybe", "x:r=fast"] {
            let spec = CcSpec::parse(bad).unwrap();
            let mut p = CcParams::new(&spec, &TABLE);
            let key = &spec.params[0].0;
            let refused = match key.as_str() {
                "n" => p.whole(key).is_err(),
                "on" => p.switch(key).is_err(),
                "r" => p.rate(key).is_err(),
                _ => p.real(key).is_err(),
            };
            assert!(refused, "{bad} accepted");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100m"), Some(100_000_000));
        assert_eq!(parse_rate("100mbit"), Some(100_000_000));
        assert_eq!(parse_rate("2.5Gbps"), Some(2_500_000_000));
        assert_eq!(parse_rate("64k"), Some(64_000));
        assert_eq!(parse_rate("1200"), Some(1200));
        assert_eq!(parse_rate("fast"), None);
        assert_eq!(parse_rate("-1m"), None);
        assert_eq!(parse_rate(""), None);
    }
}
