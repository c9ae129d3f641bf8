//! Loss rates and other probabilities: `0.5%` or the fraction `0.005`.
//!
//! Invariant: a value lies in [0, 1]; a bare number above 1 is refused as ambiguous, since
//! `5` may mean 5% or be a mistake, and the message suggests `5%`.

use crate::decimal::{split, Decimal};
use crate::UnitError;

/// A parsed fraction, convertible to per cent without rounding twice.
#[derive(Debug, Clone, PartialEq)]
pub struct Fraction {
    number: Decimal,
}

impl Fraction {
    /// The fraction (`1%` -> 0.01).
    pub fn value(&self) -> f64 {
        self.number.value(0, 1.0)
    }

    /// The same in per cent (`0.01` -> 1.0).
    pub fn percent(&self) -> f64 {
        self.number.value(2, 1.0)
    }

    /// Parse `0.5%` or `0.005`.
    pub fn parse(input: &str) -> Result<Fraction, UnitError> {
        let (number, unit) = split(input)?;
        let number = match unit {
            "%" => number.shifted(-2),
            "" if number.above_one() => {
                let n = input.trim();
                return Err(UnitError::new(
                    input,
                    format!("'{n}' is ambiguous: write {n}% for per cent, or a fraction from 0 to 1"),
                ));
            }
            "" => number,
            other => {
                return Err(UnitError::new(input, format!("unexpected '{other}': write e.g. 0.1% or 0.001")));
            }
        };
        let fraction = Fraction { number };
        if fraction.value() > 1.0 {
            return Err(UnitError::new(input, "a probability is at most 100%"));
        }
        Ok(fraction)
    }
}

/// A fraction in [0, 1]: `0.5%` and `0.005` are both 0.005; `5` is refused (write `5%`).
pub fn parse_fraction(input: &str) -> Result<f64, UnitError> {
    Fraction::parse(input).map(|f| f.value())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_cent_and_fractions_agree() {
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction("0.01"), Ok(0.01));
        assert_eq!(parse_fraction("0.1%"), Ok(0.001));
        assert_eq!(parse_fraction("0.5%"), Ok(0.005));
        assert_eq!(parse_fraction("0.5"), Ok(0.5));
        assert_eq!(parse_fraction("100%"), Ok(1.0));
        assert_eq!(parse_fraction("1"), Ok(1.0));
        assert_eq!(parse_fraction("0"), Ok(0.0));
        assert_eq!(Fraction::parse("0.001").unwrap().percent(), 0.1);
        assert_eq!(Fraction::parse("0.1%").unwrap().percent(), 0.1);
    }

    #[test]
    fn refusals() {
        let e = parse_fraction("5").unwrap_err().to_string();
        assert!(e.contains("ambiguous") && e.contains("5%"), "{e}");
        for bad in ["101%", "x", "1%%", "-1%", "1.5", "", "5 percent"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }
}
