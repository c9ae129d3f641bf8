//! Human-readable sizes, rates and durations: bytes in binary units (MiB, GiB, as `ls -h`),
//! rates in decimal bits per second (Mb/s, Gb/s, as network people and iperf3 quote them).

use std::time::Duration;

/// `1536` -> `1.5 KiB`, `0` -> `0 B`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value >= 100.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
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
