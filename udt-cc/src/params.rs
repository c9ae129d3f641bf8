//! The parameter table: every parameter of every algorithm written once (key, kind and range,
//! unit, default, what it does), from which `--cc NAME:key=value` is parsed and checked
//! ([`CcParams`]), and `udt cc list` and the parameter tables of docs/congestion-control.md are
//! generated ([`crate::registry::markdown`]).
//!
//! Invariants: a default is read from the algorithm's own configuration type (`fn` pointers to
//! its `Default`), so the table cannot disagree with the code; every value taken is checked
//! against its entry's kind and range; an algorithm can only take keys its table lists.

use std::fmt;

use crate::spec::{err, parse_rate, CcSpec, CcSpecError};

/// What values a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// A real number in `[min, max]`.
    Real {
        /// Smallest value accepted.
        min: f64,
        /// Largest value accepted.
        max: f64,
    },
    /// A whole number in `[min, max]`.
    Whole {
        /// Smallest value accepted.
        min: u64,
        /// Largest value accepted.
        max: u64,
    },
    /// A fraction strictly between 0 and 1.
    Fraction,
    /// `true`/`false` (also `1`/`0`, `on`/`off`, `yes`/`no`).
    Switch,
    /// A rate in bits per second: a number with an optional `k`, `m` or `g` suffix (`500m`).
    Rate,
}

/// A parameter's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// Of a [`Kind::Real`] or [`Kind::Fraction`] parameter.
    Real(f64),
    /// Of a [`Kind::Whole`] parameter.
    Whole(u64),
    /// Of a [`Kind::Switch`] parameter.
    Switch(bool),
    /// Of a [`Kind::Rate`] parameter, bits per second.
    Rate(u64),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Real(v) => f.write_str(&short_real(v)),
            Value::Whole(v) => write!(f, "{v}"),
            Value::Switch(v) => write!(f, "{v}"),
            Value::Rate(v) => match [(1_000_000_000, "g"), (1_000_000, "m"), (1_000, "k")]
                .iter()
                .find(|&&(unit, _)| v >= unit && v % unit == 0)
            {
                Some(&(unit, suffix)) => write!(f, "{}{suffix}", v / unit),
                None => write!(f, "{v}"),
            },
        }
    }
}

/// `v` as a person writes it: at most 5 significant digits, an exponent below 0.001.
fn short_real(v: f64) -> String {
    let plain = format!("{v}");
    if plain.len() <= 8 {
        return plain;
    }
    if v != 0.0 && v.abs() < 1e-3 {
        return format!("{v:e}");
    }
    let rounded = format!("{v:.4}");
    rounded.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One documented parameter of an algorithm.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    /// Key, as written after the colon.
    pub key: &'static str,
    /// Values it takes.
    pub kind: Kind,
    /// Unit of the value (`"packets"`, `"ms"`, `"x BDP"`; empty for a pure number).
    pub unit: &'static str,
    /// Its default, read from the algorithm's configuration type.
    pub default: fn() -> Value,
    /// What it does.
    pub doc: &'static str,
}

impl ParamInfo {
    /// The default as written on a command line.
    pub fn default_text(&self) -> String {
        (self.default)().to_string()
    }

    /// The accepted values, in words: `1-64`, `(0, 1)`, `true or false`, `bits/s`.
    pub fn range_text(&self) -> String {
        match self.kind {
            Kind::Real { min, max } => format!("{min} to {max}"),
            Kind::Whole { min, max } => format!("{min}-{max}"),
            Kind::Fraction => "between 0 and 1".into(),
            Kind::Switch => "true or false".into(),
            Kind::Rate => "k, m, g suffixes".into(),
        }
    }

    /// Parse and check `raw` for `algorithm`.
    pub fn parse(&self, algorithm: &str, raw: &str) -> Result<Value, CcSpecError> {
        let key = self.key;
        let refuse = |why: String| CcSpecError(format!("{algorithm}: {key}={raw} {why}"));
        match self.kind {
            Kind::Real { min, max } => {
                let v: f64 = raw.parse().map_err(|_| refuse("is not a number".into()))?;
                if !v.is_finite() || v < min || v > max {
                    return Err(refuse(format!("is outside [{min}, {max}]")));
                }
                Ok(Value::Real(v))
            }
            Kind::Fraction => {
                let v: f64 = raw.parse().map_err(|_| refuse("is not a number".into()))?;
                if !(v > 0.0 && v < 1.0) {
                    return Err(refuse("must be strictly between 0 and 1".into()));
                }
                Ok(Value::Real(v))
            }
            Kind::Whole { min, max } => {
                let v: u64 = raw.parse().map_err(|_| refuse("is not a whole number".into()))?;
                if v < min || v > max {
                    return Err(refuse(format!("is outside [{min}, {max}]")));
                }
                Ok(Value::Whole(v))
            }
            Kind::Switch => match raw.to_ascii_lowercase().as_str() {
                "true" | "1" | "on" | "yes" => Ok(Value::Switch(true)),
                "false" | "0" | "off" | "no" => Ok(Value::Switch(false)),
                _ => Err(refuse("is not true or false".into())),
            },
            Kind::Rate => parse_rate(raw)
                .map(Value::Rate)
                .ok_or_else(|| refuse("is not a rate (e.g. 100m, 1.5g, 250000)".into())),
        }
    }
}

impl CcParams {
    fn value(&mut self, key: &str) -> Result<Value, CcSpecError> {
        let info = self.table().iter().find(|p| p.key == key).copied().ok_or_else(|| {
            CcSpecError(format!("{}: the parameter table has no {key:?}", self.algorithm()))
        })?;
        match self.take_raw(key) {
            Some(raw) => info.parse(self.algorithm(), &raw),
            None => Ok((info.default)()),
        }
    }

    /// A real (or fraction) parameter's value: given, or its default.
    pub fn real(&mut self, key: &str) -> Result<f64, CcSpecError> {
        match self.value(key)? {
            Value::Real(v) => Ok(v),
            other => Err(self.mismatch(key, other)),
        }
    }

    /// A whole-number parameter's value.
    pub fn whole(&mut self, key: &str) -> Result<u64, CcSpecError> {
        match self.value(key)? {
            Value::Whole(v) => Ok(v),
            other => Err(self.mismatch(key, other)),
        }
    }

    /// A switch's value.
    pub fn switch(&mut self, key: &str) -> Result<bool, CcSpecError> {
        match self.value(key)? {
            Value::Switch(v) => Ok(v),
            other => Err(self.mismatch(key, other)),
        }
    }

    /// A rate's value, bits per second.
    pub fn rate(&mut self, key: &str) -> Result<u64, CcSpecError> {
        match self.value(key)? {
            Value::Rate(v) => Ok(v),
            other => Err(self.mismatch(key, other)),
        }
    }

    fn mismatch(&self, key: &str, got: Value) -> CcSpecError {
        CcSpecError(format!("{}: {key} is a {got:?} in the parameter table", self.algorithm()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_people_write_them() {
        assert_eq!(Value::Real(2.0).to_string(), "2");
        assert_eq!(Value::Real(0.0625).to_string(), "0.0625");
        assert_eq!(Value::Real(2.0 / std::f64::consts::LN_2).to_string(), "2.8854");
        assert_eq!(Value::Real(1e-7).to_string(), "1e-7");
        assert_eq!(Value::Real(83000.0).to_string(), "83000");
        assert_eq!(Value::Rate(1_000_000_000).to_string(), "1g");
        assert_eq!(Value::Rate(10_000_000).to_string(), "10m");
        assert_eq!(Value::Rate(1_500_000).to_string(), "1500k");
        assert_eq!(Value::Rate(0).to_string(), "0");
        assert_eq!(Value::Switch(true).to_string(), "true");
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
}
