//! How `udt perf --json` writes its decimals: every float rounded to what its measurement can
//! tell (times to the microsecond, rates to the bit per second, RTTs and periods to the
//! nanosecond), so no float noise (`4253159889.0554543`) reaches a reader; and an estimate not
//! made yet as `null`, never a sentinel.

use serde::Serializer;

/// `x` rounded to `decimals` places.
fn round(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let rounded = (x * scale).round() / scale;
    if rounded.is_finite() {
        rounded
    } else {
        x
    }
}

/// Whole units (bits per second, packets).
pub fn whole<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round(*x, 0))
}

/// Three decimals (ms, µs, packets of a window).
pub fn milli<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round(*x, 3))
}

/// Six decimals (seconds to the microsecond, Gb/s to the kb/s).
pub fn micro<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round(*x, 6))
}

/// An estimate in packets per second, `None` until the protocol has one (it reports 0 or
/// `u32::MAX` then).
pub fn estimate(pkts: u32) -> Option<u64> {
    (pkts != 0 && pkts != u32::MAX).then_some(u64::from(pkts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_what_the_measurement_tells() {
        assert_eq!(round(4253159889.0554543, 0), 4253159889.0);
        assert_eq!(round(1.000079441, 6), 1.000079);
        assert_eq!(round(13918.72774275, 3), 13918.728);
        assert_eq!(round(f64::MAX, 6), f64::MAX);
        assert_eq!(estimate(u32::MAX), None);
        assert_eq!(estimate(0), None);
        assert_eq!(estimate(8000), Some(8000));
    }
}
