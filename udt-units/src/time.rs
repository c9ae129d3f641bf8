//! Times: `500ms`, `2s`, `1m` (a minute), `1h`, `3d`; a bare number in the unit the flag
//! documents, or refused where the flag requires a unit.
//!
//! Invariant: the decimal units (`ns` to `s`) rescale exactly (`0.3s` is the same `f64` as
//! `300ms`); `m`, `h`, `d` are 60, 3600 and 86400 seconds.

use std::time::Duration;

use crate::decimal::{split, Decimal};
use crate::UnitError;

/// A unit of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Nanoseconds.
    Nanos,
    /// Microseconds.
    Micros,
    /// Milliseconds.
    Millis,
    /// Seconds.
    Secs,
    /// Minutes.
    Minutes,
    /// Hours.
    Hours,
    /// Days.
    Days,
}

impl TimeUnit {
    /// The unit as `10^exp10 x factor` seconds.
    fn scale(self) -> (i32, f64) {
        match self {
            TimeUnit::Nanos => (-9, 1.0),
            TimeUnit::Micros => (-6, 1.0),
            TimeUnit::Millis => (-3, 1.0),
            TimeUnit::Secs => (0, 1.0),
            TimeUnit::Minutes => (0, 60.0),
            TimeUnit::Hours => (0, 3600.0),
            TimeUnit::Days => (0, 86_400.0),
        }
    }

    fn of(unit: &str) -> Option<TimeUnit> {
        Some(match unit.to_ascii_lowercase().as_str() {
            "ns" | "nsec" | "nsecs" => TimeUnit::Nanos,
            "us" | "µs" | "usec" | "usecs" => TimeUnit::Micros,
            "ms" | "msec" | "msecs" => TimeUnit::Millis,
            "s" | "sec" | "secs" | "second" | "seconds" => TimeUnit::Secs,
            "m" | "min" | "mins" | "minute" | "minutes" => TimeUnit::Minutes,
            "h" | "hr" | "hrs" | "hour" | "hours" => TimeUnit::Hours,
            "d" | "day" | "days" => TimeUnit::Days,
            _ => return None,
        })
    }
}

/// A parsed time, convertible to any unit without rounding through another.
#[derive(Debug, Clone, PartialEq)]
pub struct Time {
    number: Decimal,
    unit: TimeUnit,
}

impl Time {
    /// The time in `unit` as the nearest `f64`.
    pub fn in_unit(&self, unit: TimeUnit) -> f64 {
        let (from_exp, from_factor) = self.unit.scale();
        let (to_exp, to_factor) = unit.scale();
        if from_factor == to_factor {
            self.number.value(from_exp - to_exp, 1.0)
        } else {
            self.number.value(from_exp - to_exp, from_factor) / to_factor
        }
    }

    /// The time in seconds.
    pub fn secs(&self) -> f64 {
        self.in_unit(TimeUnit::Secs)
    }

    /// Whether the time is zero.
    pub fn is_zero(&self) -> bool {
        self.number.is_zero()
    }

    /// The time as a [`Duration`], to the nearest nanosecond.
    pub fn duration(&self) -> Option<Duration> {
        let nanos = self.in_unit(TimeUnit::Nanos).round();
        (0.0..1.8e19).contains(&nanos).then(|| Duration::from_nanos(nanos as u64))
    }
}

/// A time with a unit; a bare number is in `bare`, or refused (except `0`) when `bare` is
/// `None`.
pub fn parse_time(input: &str, bare: Option<TimeUnit>) -> Result<Time, UnitError> {
    let (number, unit) = split(input)?;
    let unit = match (unit, bare) {
        ("", Some(bare)) => bare,
        ("", None) if number.is_zero() => TimeUnit::Secs,
        ("", None) => {
            return Err(UnitError::new(input, format!("missing unit: write e.g. {input}ms or {input}s")));
        }
        (text, _) => TimeUnit::of(text).ok_or_else(|| {
            UnitError::new(input, format!("unknown time unit '{text}' (use ns, us, ms, s, m, h or d)"))
        })?,
    };
    Ok(Time { number, unit })
}

/// [`parse_time`] as a [`Duration`].
pub fn parse_duration(input: &str, bare: Option<TimeUnit>) -> Result<Duration, UnitError> {
    parse_time(input, bare)?.duration().ok_or_else(|| UnitError::new(input, "the time is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECS: Option<TimeUnit> = Some(TimeUnit::Secs);

    #[test]
    fn units() {
        let table = [
            ("500ms", Duration::from_millis(500)),
            ("2s", Duration::from_secs(2)),
            ("1m", Duration::from_secs(60)),
            ("1.5m", Duration::from_secs(90)),
            ("1h", Duration::from_secs(3600)),
            ("3d", Duration::from_secs(3 * 86_400)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("1.5ms", Duration::from_micros(1500)),
            ("100ns", Duration::from_nanos(100)),
            ("10 sec", Duration::from_secs(10)),
            ("10", Duration::from_secs(10)),
            ("2.5", Duration::from_millis(2500)),
        ];
        for (text, d) in table {
            assert_eq!(parse_duration(text, SECS), Ok(d), "{text}");
        }
        assert_eq!(parse_duration("100", Some(TimeUnit::Millis)), Ok(Duration::from_millis(100)));
    }

    #[test]
    fn conversions_are_exact() {
        let ms = |s: &str| parse_time(s, Some(TimeUnit::Millis)).unwrap().in_unit(TimeUnit::Millis);
        assert_eq!(ms("0.3s"), 300.0);
        assert_eq!(ms("123.4"), 123.4);
        assert_eq!(parse_time("300ms", None).unwrap().secs(), 0.3);
        assert_eq!(parse_time("2m", None).unwrap().in_unit(TimeUnit::Minutes), 2.0);
        assert_eq!(parse_time("90s", None).unwrap().in_unit(TimeUnit::Minutes), 1.5);
    }

    #[test]
    fn refusals() {
        assert!(parse_duration("50", None).unwrap_err().to_string().contains("50ms"));
        assert_eq!(parse_duration("0", None), Ok(Duration::ZERO));
        for bad in ["ms", "5 parsecs", "", "-1s", "1e3s", "99999999999999d"] {
            assert!(parse_duration(bad, SECS).is_err(), "{bad}");
        }
    }
}
