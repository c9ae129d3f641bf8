//! Rates: bits per second with SI prefixes; bytes per second only when written with an
//! upper-case `B` and `/s` (or `ps`), or the word `byte`.
//!
//! Invariant: a lower-case `b` is a bit, an upper-case `B` a byte; binary prefixes (`Ki`,
//! `Mi`, ...) go with bytes only; a byte or bit unit without a time (`100MB`) is refused.

use crate::decimal::{split, Decimal};
use crate::UnitError;

/// The unit of a bare number (no prefix, no unit) for a rate flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateUnit {
    /// Bits per second.
    BitsPerSec,
    /// Kilobits (10^3 bits) per second.
    KbitPerSec,
    /// Megabits (10^6 bits) per second.
    MbitPerSec,
    /// Gigabits (10^9 bits) per second.
    GbitPerSec,
}

impl RateUnit {
    fn exp10(self) -> i32 {
        match self {
            RateUnit::BitsPerSec => 0,
            RateUnit::KbitPerSec => 3,
            RateUnit::MbitPerSec => 6,
            RateUnit::GbitPerSec => 9,
        }
    }
}

/// A rate in bits per second, a bare number being bits per second: `100mbit` -> 100,000,000.
///
/// Refuses rates of 10^15 bits per second or more (no link is that fast, and the value
/// would lose precision as a whole number).
pub fn parse_rate(input: &str) -> Result<u64, UnitError> {
    let bits = parse_rate_in(input, RateUnit::BitsPerSec)?;
    if bits >= 1e15 {
        return Err(UnitError::new(input, "rates of 1000 Tbit/s or more are not supported"));
    }
    Ok(bits.round() as u64)
}

/// A rate in `unit`, which is also the unit of a bare number: `parse_rate_in("100",
/// MbitPerSec)` and `parse_rate_in("0.1gbit", MbitPerSec)` are both `100.0`.
pub fn parse_rate_in(input: &str, unit: RateUnit) -> Result<f64, UnitError> {
    let (number, text) = split(input)?;
    let (bits, factor) = bits_of(input, &number, text, unit)?;
    let v = bits.value(-unit.exp10(), factor);
    if !v.is_finite() {
        return Err(UnitError::new(input, "the rate is out of range"));
    }
    Ok(v)
}

/// The rate in bits per second as a decimal and an exact factor (8 x 1024^n for bytes).
fn bits_of(input: &str, number: &Decimal, text: &str, bare: RateUnit) -> Result<(Decimal, f64), UnitError> {
    if text.is_empty() {
        return Ok((number.shifted(bare.exp10()), 1.0));
    }
    let (exp10, rest) = match text.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (3, &text[1..]),
        Some('m') => (6, &text[1..]),
        Some('g') => (9, &text[1..]),
        Some('t') => (12, &text[1..]),
        _ => (0, text),
    };
    let binary = rest.starts_with(['i', 'I']) && exp10 > 0;
    let rest = if binary { &rest[1..] } else { rest };
    let per_second = match rest {
        "" if !binary => Per::Bit,
        "bit" | "bits" | "bit/s" | "bits/s" | "b/s" | "bps" => Per::Bit,
        "B/s" | "Bps" => Per::Byte,
        other => match other.to_ascii_lowercase().as_str() {
            "bit" | "bits" | "bit/s" | "bits/s" => Per::Bit,
            "byte/s" | "bytes/s" => Per::Byte,
            "b" | "byte" | "bytes" | "i" | "" => Per::Missing,
            _ => Per::Unknown,
        },
    };
    match per_second {
        Per::Bit if binary => Err(UnitError::new(
            input,
            format!("binary prefixes are for bytes: write e.g. {}B/s, or {}bit for bits", &text[..2], &text[..1]),
        )),
        Per::Bit => Ok((number.shifted(exp10), 1.0)),
        Per::Byte if binary => Ok((number.clone(), 8.0 * 1024f64.powi(exp10 / 3))),
        Per::Byte => Ok((number.shifted(exp10), 8.0)),
        Per::Missing => Err(UnitError::new(
            input,
            format!("'{text}' is a size, not a rate: write e.g. 100mbit (bits per second) or 100MB/s (bytes per second)"),
        )),
        Per::Unknown => Err(UnitError::new(
            input,
            format!(
                "unknown rate unit '{text}': use bits per second (100mbit, 500m, 1gbit, 10mbps, 940Mb/s) or bytes \
                 per second (10MB/s, 10MiB/s)"
            ),
        )),
    }
}

/// What the unit after the prefix counts.
enum Per {
    Bit,
    Byte,
    /// A size unit without `/s`.
    Missing,
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_per_second() {
        let table = [
            ("100mbit", 100_000_000),
            ("1gbit", 1_000_000_000),
            ("1.5gbit", 1_500_000_000),
            ("500m", 500_000_000),
            ("500M", 500_000_000),
            ("10mbps", 10_000_000),
            ("10Mbps", 10_000_000),
            ("940 Mb/s", 940_000_000),
            ("940mbit/s", 940_000_000),
            ("64k", 64_000),
            ("2t", 2_000_000_000_000),
            ("1200", 1200),
            ("1200bps", 1200),
            ("1200 bit/s", 1200),
            ("0", 0),
        ];
        for (text, bits) in table {
            assert_eq!(parse_rate(text), Ok(bits), "{text}");
        }
    }

    #[test]
    fn bytes_per_second() {
        assert_eq!(parse_rate("10MB/s"), Ok(80_000_000));
        assert_eq!(parse_rate("10MBps"), Ok(80_000_000));
        assert_eq!(parse_rate("10 mbyte/s"), Ok(80_000_000));
        assert_eq!(parse_rate("1MiB/s"), Ok(8 << 20));
        assert_eq!(parse_rate("1 KiBps"), Ok(8 << 10));
        assert_eq!(parse_rate("100B/s"), Ok(800));
    }

    #[test]
    fn bare_numbers_take_the_flags_unit() {
        assert_eq!(parse_rate_in("100", RateUnit::MbitPerSec), Ok(100.0));
        assert_eq!(parse_rate_in("0.3", RateUnit::MbitPerSec), Ok(0.3));
        assert_eq!(parse_rate_in("300kbit", RateUnit::MbitPerSec), Ok(0.3));
        assert_eq!(parse_rate_in("0.1gbit", RateUnit::MbitPerSec), Ok(100.0));
        assert_eq!(parse_rate_in("2", RateUnit::GbitPerSec), Ok(2.0));
        assert_eq!(parse_rate_in("2", RateUnit::KbitPerSec), Ok(2.0));
    }

    #[test]
    fn refusals_say_why() {
        for (bad, hint) in [
            ("100MB", "size"),
            ("100mb", "size"),
            ("1Mi", "size"),
            ("1Mibit", "binary prefixes"),
            ("100 furlongs", "unknown rate unit"),
            ("mbit", "number"),
            ("-5mbit", "negative"),
            ("1..5gbit", "not a number"),
            ("", "number"),
            ("1000tbit", "not supported"),
        ] {
            let e = parse_rate(bad).expect_err(bad);
            assert!(e.to_string().contains(hint), "{bad}: {e}");
            assert_eq!(e.input(), bad);
        }
    }
}
