//! The number part of a quantity: unsigned decimal text, rescaled by powers of ten exactly.
//!
//! Invariant: a [`Decimal`] holds ASCII digits with at most one `.` and at least one digit, so
//! `"{digits}e{exp}"` is always valid `f64` syntax and rescaling rounds once, at the end.

use crate::UnitError;

/// An unsigned decimal number as written, times a power of ten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decimal {
    digits: String,
    exp10: i32,
}

impl Decimal {
    /// `digits x 10^exp10 x factor` as the nearest `f64` (`factor` exact: 1, 8, 60, 1024^n).
    pub(crate) fn value(&self, exp10: i32, factor: f64) -> f64 {
        let exp = self.exp10.saturating_add(exp10);
        let v: f64 = format!("{}e{exp}", self.digits).parse().unwrap_or(f64::NAN);
        v * factor
    }

    /// The same number times `10^exp10`.
    pub(crate) fn shifted(&self, exp10: i32) -> Decimal {
        Decimal { digits: self.digits.clone(), exp10: self.exp10.saturating_add(exp10) }
    }

    /// Whether the number is zero.
    pub(crate) fn is_zero(&self) -> bool {
        self.digits.bytes().all(|b| b == b'0' || b == b'.')
    }

    /// Whether the number is above one (before scaling).
    pub(crate) fn above_one(&self) -> bool {
        self.value(0, 1.0) > 1.0
    }
}

/// Splits `" 1.5 gbit "` into the number and the unit text (trimmed, case kept).
pub(crate) fn split(input: &str) -> Result<(Decimal, &str), UnitError> {
    let s = input.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let digits = num.bytes().filter(u8::is_ascii_digit).count();
    if digits == 0 {
        let hint = if s.starts_with('-') { "no negative values" } else { "expected a number first" };
        return Err(UnitError::new(input, hint));
    }
    if num.bytes().filter(|&b| b == b'.').count() > 1 {
        return Err(UnitError::new(input, format!("'{num}' is not a number")));
    }
    Ok((Decimal { digits: num.to_owned(), exp10: 0 }, unit.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_rescales_exactly() {
        let (d, u) = split(" 1.5 gbit ").unwrap();
        assert_eq!(u, "gbit");
        assert_eq!(d.value(9, 1.0), 1.5e9);
        let (d, _) = split("1%").unwrap();
        assert_eq!(d.value(-2, 1.0), 0.01);
        let (d, _) = split("300").unwrap();
        assert_eq!(d.value(-3, 1.0), 0.3);
        assert_eq!(split(".5").unwrap().0.value(0, 1.0), 0.5);
        assert!(split("1..5").is_err() && split("").is_err() && split("-1").is_err() && split("x").is_err());
        assert!(split("0.0").unwrap().0.is_zero() && !split("0.01").unwrap().0.is_zero());
    }
}
