//! Human-readable sizes, rates and durations: bytes in binary units (MiB, GiB, as `ls -h`),
//! rates in decimal bits per second (Mb/s, Gb/s, as network people and iperf3 quote them);
//! and the flag parsers every subcommand shares, in the one grammar of [`udt_units`].

use std::time::Duration;

/// `1536` -> `1.5 KiB`, `0` -> `0 B` ([`udt_units::format_bytes`]).
pub fn bytes(n: u64) -> String {
    udt_units::format_bytes(n)
}

/// A size in bytes in the shared grammar (`1M` = 10^6 bytes, `1MiB` = 2^20, `1.5G`).
pub use udt_units::parse_size;

/// A rate cap in bits per second in the shared grammar (`10mbit`, `500m`, `1gbit`, `10MB/s`;
/// a bare number is bits per second), above zero.
pub fn parse_rate_cap(s: &str) -> Result<u64, String> {
    match udt_units::parse_rate(s) {
        Ok(0) => Err("a rate cap must be above zero (leave the flag out for no cap)".into()),
        Ok(bits) => Ok(bits),
        Err(e) => Err(e.to_string()),
    }
}

/// A time above zero and at most a day: `500ms`, `2s`, `1m`; a bare number is seconds.
pub fn parse_positive_secs(s: &str) -> Result<Duration, String> {
    let d = parse_secs(s)?;
    if d.is_zero() || d > Duration::from_secs(86_400) {
        return Err("the time must be above 0 and at most a day (86400 s)".into());
    }
    Ok(d)
}

/// A time of zero or more: `0`, `500ms`, `2s`, `1m`; a bare number is seconds.
pub fn parse_secs(s: &str) -> Result<Duration, String> {
    udt_units::parse_duration(s, Some(udt_units::TimeUnit::Secs)).map_err(|e| e.to_string())
}

/// A rate in bytes per second as bits per second: `1.2 Gb/s`, `940 Mb/s`, `12.5 kb/s`.
pub fn rate(bytes_per_sec: f64) -> String {
    bits(bytes_per_sec * 8.0)
}

/// A rate in bits per second: `1.20 Gb/s`, `940 Mb/s` (the emulator's formatting, shared so
/// that `udt perf`, `udt netem` and `udt bench` print rates alike).
pub fn bits(bits_per_sec: f64) -> String {
    udt_netem::stats::format_bits(bits_per_sec)
}

/// A short duration for ETAs: `5s`, `2m05s`, `1h02m`.
pub fn eta(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// Seconds with two decimals: `0.52 s`.
pub fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_values() {
        assert_eq!(parse_size("1M"), Ok(1_000_000));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_rate_cap("10mbps"), Ok(10_000_000));
        assert_eq!(parse_rate_cap("10mbit"), Ok(10_000_000));
        assert!(parse_rate_cap("0").is_err() && parse_rate_cap("10MB").is_err());
        assert_eq!(parse_positive_secs("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_positive_secs("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_positive_secs("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_positive_secs("0").is_err() && parse_positive_secs("2d").is_err());
        assert_eq!(parse_secs("0"), Ok(Duration::ZERO));
        assert!(parse_secs("-1").is_err() && parse_secs("soon").is_err());
    }

    #[test]
    fn formats() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(420 << 20), "420 MiB");
        assert_eq!(bytes(1 << 30), "1.0 GiB");
        assert_eq!(rate(150e6), "1.20 Gb/s");
        assert_eq!(bits(940e6), "940 Mb/s");
        assert_eq!(bits(12.5e3), "12.5 kb/s");
        assert_eq!(eta(Duration::from_secs(5)), "5s");
        assert_eq!(eta(Duration::from_secs(125)), "2m05s");
        assert_eq!(eta(Duration::from_secs(3720)), "1h02m");
    }
}
