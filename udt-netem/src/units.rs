//! Parsing of the command line's quantities: rates, durations, probabilities, queue limits and
//! Gilbert-Elliott parameters.
//!
//! Invariants: no parser panics on any input; every error names the input and says what a
//! valid value looks like. Rates are bits per second of IP packets (tc's convention: `kbit`,
//! `mbit`, `gbit` are powers of 1000; a bare number is bits per second). Byte sizes use `kb`,
//! `mb`, `gb` as powers of 1000 and `kib`, `mib`, `gib` as powers of 1024.

use std::fmt;
use std::time::Duration;

use crate::config::{GeParams, QueueLimit};

/// A value on the command line that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    input: String,
    reason: String,
}

impl ParseError {
    fn new(input: &str, reason: impl Into<String>) -> Self {
        Self { input: input.to_owned(), reason: reason.into() }
    }
}

impl ParseError {
    /// The text that could not be parsed.
    pub fn input(&self) -> &str {
        &self.input
    }
}

impl fmt::Display for ParseError {
    /// The reason only: clap already quotes the input and the option in its message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for ParseError {}

/// Splits `"1.5gbit"` into `(1.5, "gbit")`; the unit is trimmed and lower-cased.
fn split_number(input: &str) -> Result<(f64, String), ParseError> {
    let s = input.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    if num.is_empty() {
        return Err(ParseError::new(input, "expected a number first"));
    }
    let value: f64 = num.parse().map_err(|_| ParseError::new(input, format!("'{num}' is not a number")))?;
    if !value.is_finite() {
        return Err(ParseError::new(input, "the number is not finite"));
    }
    Ok((value, unit.trim().to_ascii_lowercase()))
}

/// A link rate in bits per second; `0` means unlimited.
///
/// Accepts `100mbit`, `1gbit`, `1.5gbit`, `500kbit`, `10m` (tc's shorthand), `940mb/s` (the
/// project's output style) and bare numbers (bits per second). Refuses `mbps` and friends,
/// which tc reads as bytes per second while most people mean bits.
pub fn parse_rate(input: &str) -> Result<u64, ParseError> {
    let (value, unit) = split_number(input)?;
    let mult = match unit.as_str() {
        "" | "bit" | "b/s" | "bit/s" => 1.0,
        "k" | "kbit" | "kb/s" | "kbit/s" => 1e3,
        "m" | "mbit" | "mb/s" | "mbit/s" => 1e6,
        "g" | "gbit" | "gb/s" | "gbit/s" => 1e9,
        "t" | "tbit" | "tb/s" | "tbit/s" => 1e12,
        "bps" | "kbps" | "mbps" | "gbps" | "tbps" => {
            let bits = unit.trim_end_matches("ps").to_owned() + "it";
            return Err(ParseError::new(
                input,
                format!("'{unit}' is ambiguous (tc reads it as bytes/s): write '{bits}' for bits per second"),
            ));
        }
        other => {
            return Err(ParseError::new(
                input,
                format!("unknown rate unit '{other}' (use bit, kbit, mbit, gbit, e.g. 100mbit)"),
            ))
        }
    };
    let bits = value * mult;
    if bits > 1e13 {
        return Err(ParseError::new(input, "rates above 10 Tbit/s are not supported"));
    }
    if bits != 0.0 && bits < 1000.0 {
        return Err(ParseError::new(input, "rates below 1 kbit/s are not supported (0 means unlimited)"));
    }
    Ok(bits.round() as u64)
}

/// A duration such as `50ms`, `1s`, `250us` (or `250µs`), `1.5ms`, `100ns`; `0` needs no unit.
pub fn parse_duration(input: &str) -> Result<Duration, ParseError> {
    let (value, unit) = split_number(input)?;
    let secs_per_unit = match unit.as_str() {
        "ns" | "nsec" => 1e-9,
        "us" | "µs" | "usec" => 1e-6,
        "ms" | "msec" => 1e-3,
        "s" | "sec" | "secs" => 1.0,
        "" if value == 0.0 => 0.0,
        "" => return Err(ParseError::new(input, format!("missing unit: write e.g. {value}ms or {value}s"))),
        other => {
            return Err(ParseError::new(input, format!("unknown time unit '{other}' (use ns, us, ms or s)")))
        }
    };
    let secs = value * secs_per_unit;
    if secs > 3600.0 {
        return Err(ParseError::new(input, "durations above one hour are not supported"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| ParseError::new(input, e.to_string()))
}

/// A run time in seconds, as a bare number (`10`, `2.5`) or with a time unit (`500ms`).
pub fn parse_seconds(input: &str) -> Result<Duration, ParseError> {
    let (value, unit) = split_number(input)?;
    let d = if unit.is_empty() {
        Duration::try_from_secs_f64(value).map_err(|e| ParseError::new(input, e.to_string()))?
    } else {
        parse_duration(input)?
    };
    if d.is_zero() {
        return Err(ParseError::new(input, "the time must be positive"));
    }
    Ok(d)
}

/// A probability: `0.1%` is 0.001, and so is `0.001`. Must lie in [0, 1].
pub fn parse_probability(input: &str) -> Result<f64, ParseError> {
    let (value, unit) = split_number(input)?;
    let p = match unit.as_str() {
        "%" => value / 100.0,
        "" if value > 1.0 => {
            return Err(ParseError::new(
                input,
                format!("a probability is at most 1: write {value}% for per cent"),
            ))
        }
        "" => value,
        other => {
            return Err(ParseError::new(input, format!("unexpected '{other}': write e.g. 0.1% or 0.001")))
        }
    };
    if p > 1.0 {
        return Err(ParseError::new(input, "a probability is at most 100%"));
    }
    Ok(p)
}

/// A DropTail queue limit: `1000p`, `1000pkt` or a bare `1000` in packets; `1mb`, `64kb`,
/// `1500b`, `1mib` in bytes.
pub fn parse_queue(input: &str) -> Result<QueueLimit, ParseError> {
    let (value, unit) = split_number(input)?;
    let bytes_mult = match unit.as_str() {
        "" | "p" | "pkt" | "pkts" | "packets" => {
            if value.fract() != 0.0 || !(1.0..=10_000_000.0).contains(&value) {
                return Err(ParseError::new(input, "a packet limit is a whole number from 1 to 10000000"));
            }
            return Ok(QueueLimit::Packets(value as u32));
        }
        "b" | "byte" | "bytes" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(ParseError::new(
                input,
                format!("unknown queue unit '{other}' (use p for packets, or b, kb, mb, kib, mib for bytes)"),
            ))
        }
    };
    let bytes = (value * bytes_mult).round();
    if !(1.0..=16e9).contains(&bytes) {
        return Err(ParseError::new(input, "a byte limit is from 1 byte to 16 GB"));
    }
    Ok(QueueLimit::Bytes(bytes as u64))
}

/// Gilbert-Elliott parameters `p,r[,loss_bad[,loss_good]]`, each a probability: `p` moves the
/// chain from good to bad, `r` from bad to good; `loss_bad` (default 100%) and `loss_good`
/// (default 0%) are the loss probabilities in each state (netem's `1-h` and `1-k`).
pub fn parse_ge(input: &str) -> Result<GeParams, ParseError> {
    let parts: Vec<&str> = input.split(',').map(str::trim).collect();
    if !(2..=4).contains(&parts.len()) {
        return Err(ParseError::new(
            input,
            "expected p,r[,loss_bad[,loss_good]], e.g. 1%,30% or 1%,30%,90%,0%",
        ));
    }
    let prob = |i: usize, default: f64| -> Result<f64, ParseError> {
        match parts.get(i) {
            Some(s) => parse_probability(s).map_err(|e| ParseError::new(input, format!("'{s}': {e}"))),
            None => Ok(default),
        }
    };
    let params =
        GeParams { p: prob(0, 0.0)?, r: prob(1, 0.0)?, loss_bad: prob(2, 1.0)?, loss_good: prob(3, 0.0)? };
    if params.r == 0.0 && params.p > 0.0 {
        return Err(ParseError::new(
            input,
            "r must be positive, or the chain stays in the bad state forever",
        ));
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100mbit"), Ok(100_000_000));
        assert_eq!(parse_rate("1gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate("1.5gbit"), Ok(1_500_000_000));
        assert_eq!(parse_rate("500kbit"), Ok(500_000));
        assert_eq!(parse_rate("2000000"), Ok(2_000_000));
        assert_eq!(parse_rate("10M"), Ok(10_000_000));
        assert_eq!(parse_rate("940 Mb/s"), Ok(940_000_000));
        assert_eq!(parse_rate("0"), Ok(0));
        for bad in ["", "mbit", "100mbps", "100 furlongs", "1..5gbit", "-5mbit", "10", "100tbit"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        let e = parse_rate("100mbps").unwrap_err().to_string();
        assert!(e.contains("mbit"), "{e}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("50ms"), Ok(Duration::from_millis(50)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["50", "ms", "5 parsecs", "2h", "99999s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_seconds("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_seconds("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_seconds("0").is_err());
    }

    #[test]
    fn probabilities() {
        assert_eq!(parse_probability("0.1%"), Ok(0.001));
        assert_eq!(parse_probability("0.001"), Ok(0.001));
        assert_eq!(parse_probability("100%"), Ok(1.0));
        assert_eq!(parse_probability("0"), Ok(0.0));
        for bad in ["5", "101%", "x", "1%%", "-1%"] {
            assert!(parse_probability(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn queues() {
        assert_eq!(parse_queue("1000p"), Ok(QueueLimit::Packets(1000)));
        assert_eq!(parse_queue("1000"), Ok(QueueLimit::Packets(1000)));
        assert_eq!(parse_queue("1MB"), Ok(QueueLimit::Bytes(1_000_000)));
        assert_eq!(parse_queue("64kib"), Ok(QueueLimit::Bytes(65536)));
        assert_eq!(parse_queue("1500b"), Ok(QueueLimit::Bytes(1500)));
        for bad in ["0p", "1.5p", "10 parsecs", "0b", ""] {
            assert!(parse_queue(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn gilbert_elliott() {
        let ge = parse_ge("1%,30%").unwrap();
        assert_eq!((ge.p, ge.r, ge.loss_bad, ge.loss_good), (0.01, 0.3, 1.0, 0.0));
        let ge = parse_ge("0.01, 0.3, 90%, 0.1%").unwrap();
        assert_eq!((ge.loss_bad, ge.loss_good), (0.9, 0.001));
        for bad in ["1%", "1%,2%,3%,4%,5%", "1%,0", "x,y"] {
            assert!(parse_ge(bad).is_err(), "{bad}");
        }
    }
}
