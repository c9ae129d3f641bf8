//! The parameter table: every parameter of every algorithm written once (key, kind and range,
//! unit, default, what it does), from which `--cc NAME:key=value` is parsed and checked, and
//! `udt cc list` and the parameter tables of docs/congestion-control.md are generated.
//!
//! Invariants: a default is read from the algorithm's own configuration type (`fn` pointers to
//! its `Default`), so the table cannot disagree with the code; every value taken is checked
//! against its entry's kind and range; an algorithm can only take keys its table lists.

use std::fmt;

use crate::spec::{parse_rate, CcParams, CcSpecError};

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

/// Where docs/congestion-control.md's generated parameter tables begin.
pub const BEGIN: &str = "<!-- generated by `udt cc list --markdown`: begin -->";
/// Where they end.
pub const END: &str = "<!-- generated by `udt cc list --markdown`: end -->";

/// The parameter tables of the catalog as Markdown, one table per algorithm that takes any (the
/// tables of docs/congestion-control.md; `udt cc list --markdown` prints them).
pub fn markdown() -> String {
    let mut out = String::new();
    for info in crate::catalog() {
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
