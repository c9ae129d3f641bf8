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

/// Parse a size: bytes, or a number with `K`, `M`, `G`, `T` (powers of 1024, also `KiB` ...)
/// or `KB`, `MB`, `GB`, `TB` (powers of 1000); fractions allowed (`1.5G`).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("`{s}` is not a size (like 500M, 2G, 10GB)"))?;
    let scale: f64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1.0,
        "K" | "KIB" => 1024.0,
        "M" | "MIB" => 1024f64.powi(2),
        "G" | "GIB" => 1024f64.powi(3),
        "T" | "TIB" => 1024f64.powi(4),
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        other => return Err(format!("`{other}` is not a size unit (K, M, G, T; KB, MB, GB, TB)")),
    };
    let bytes = value * scale;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(format!("`{s}` is out of range"));
    }
    Ok(bytes.round() as u64)
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
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("1K"), Ok(1024));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_size("10 MiB"), Ok(10 << 20));
        assert!(parse_size("ten").is_err() && parse_size("5X").is_err() && parse_size("").is_err());
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
