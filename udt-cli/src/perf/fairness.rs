//! How evenly the streams of a test shared the path: Jain's fairness index over the streams'
//! rates (1 when all are equal, 1/n when one takes everything; Jain, Chiu and Hawe, DEC-TR-301,
//! 1984) and the spread of the rates (least, median, most).
//!
//! Invariant: computed over every stream of the test, a stream that moved nothing included (it
//! counts as a rate of 0).

use serde::Serialize;

use super::round;

/// The fairness of a test of several streams.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fairness {
    /// Jain's index over the streams' rates: (sum x)^2 / (n sum x^2), in 1/n..=1.
    #[serde(serialize_with = "round::micro")]
    pub jain: f64,
    /// The slowest stream's rate, bits per second.
    #[serde(serialize_with = "round::whole")]
    pub min_bits_per_second: f64,
    /// The median stream's rate (the mean of the middle two for an even count).
    #[serde(serialize_with = "round::whole")]
    pub median_bits_per_second: f64,
    /// The fastest stream's rate.
    #[serde(serialize_with = "round::whole")]
    pub max_bits_per_second: f64,
}

impl Fairness {
    /// Over `rates` (bits per second, one per stream); `None` for fewer than two streams, or
    /// when none moved anything.
    pub fn over(rates: &[f64]) -> Option<Fairness> {
        if rates.len() < 2 {
            return None;
        }
        let sum: f64 = rates.iter().sum();
        let squares: f64 = rates.iter().map(|x| x * x).sum();
        if squares <= 0.0 {
            return None;
        }
        let mut sorted = rates.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
        Some(Fairness {
            jain: sum * sum / (n as f64 * squares),
            min_bits_per_second: sorted[0],
            median_bits_per_second: median,
            max_bits_per_second: sorted[n - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_rates_are_fair_and_one_hog_is_one_over_n() {
        let even = Fairness::over(&[5.0, 5.0, 5.0, 5.0]).unwrap();
        assert_eq!(even.jain, 1.0);
        assert_eq!((even.min_bits_per_second, even.median_bits_per_second), (5.0, 5.0));
        let hog = Fairness::over(&[8.0, 0.0, 0.0, 0.0]).unwrap();
        assert_eq!(hog.jain, 0.25);
        assert_eq!((hog.min_bits_per_second, hog.max_bits_per_second), (0.0, 8.0));
        assert_eq!(hog.median_bits_per_second, 0.0);
    }

    #[test]
    fn the_index_of_uneven_rates_and_the_median_of_an_odd_count() {
        // (1 + 2 + 3)^2 / (3 * 14) = 36 / 42.
        let f = Fairness::over(&[3.0, 1.0, 2.0]).unwrap();
        assert!((f.jain - 36.0 / 42.0).abs() < 1e-12, "{}", f.jain);
        assert_eq!(f.median_bits_per_second, 2.0);
    }

    #[test]
    fn one_stream_or_nothing_moved_has_no_index() {
        assert_eq!(Fairness::over(&[7.0]), None);
        assert_eq!(Fairness::over(&[]), None);
        assert_eq!(Fairness::over(&[0.0, 0.0]), None);
    }
}
