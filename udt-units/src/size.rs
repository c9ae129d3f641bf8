//! Sizes: bytes with SI prefixes (powers of 1000) or IEC prefixes (powers of 1024), and
//! packet counts where a flag takes them.
//!
//! Invariant: every unit means what it says (`1M` = `1MB` = 10^6 bytes, `1MiB` = 2^20 bytes);
//! case does not matter; a packet count is a whole number.

use crate::decimal::split;
use crate::UnitError;

/// What a bare number counts, for a flag that takes sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bare {
    /// Bytes (`--max-size 1000`); packet counts are refused.
    Bytes,
    /// Bytes; a bare number counts packets (`--queue 100` = `--queue 100p`).
    Packets,
    /// Bytes or packets (`100p`); a bare number counts bytes.
    BytesOrPackets,
}

/// A size in bytes or a number of packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// So many bytes.
    Bytes(u64),
    /// So many packets.
    Packets(u64),
}

/// `n` bytes as people read them, in binary units (as `ls -h`): `1536` -> `1.5 KiB`, `0` ->
/// `0 B`; one decimal below 100 of a unit, none above.
pub fn format_bytes(n: u64) -> String {
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

/// A size in bytes: `1500`, `64k`, `1M` (10^6), `1MiB` (2^20), `1.5G`. Packet counts are
/// refused.
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    match parse_amount(input, Bare::Bytes)? {
        Amount::Bytes(n) => Ok(n),
        Amount::Packets(_) => Err(UnitError::new(input, "this flag takes bytes, not packets")),
    }
}

/// A size in bytes or a packet count (`100p`, `100pkts`), a bare number as `bare` says.
pub fn parse_amount(input: &str, bare: Bare) -> Result<Amount, UnitError> {
    let (number, unit) = split(input)?;
    let unit = unit.to_ascii_lowercase();
    let packets = matches!(unit.as_str(), "p" | "pkt" | "pkts" | "packet" | "packets")
        || (unit.is_empty() && bare == Bare::Packets);
    if packets {
        if bare == Bare::Bytes {
            return Err(UnitError::new(input, "this flag takes bytes (like 1500, 64k, 1MiB), not packets"));
        }
        let n = number.value(0, 1.0);
        if n.fract() != 0.0 || !(0.0..1e15).contains(&n) {
            return Err(UnitError::new(input, "a packet count is a whole number"));
        }
        return Ok(Amount::Packets(n as u64));
    }
    let stem = ["bytes", "byte", "b"].iter().find_map(|s| unit.strip_suffix(s)).unwrap_or(&unit);
    let (exp10, binary) = match stem {
        "" => (0, 0),
        "k" => (3, 0),
        "m" => (6, 0),
        "g" => (9, 0),
        "t" => (12, 0),
        "ki" => (0, 1),
        "mi" => (0, 2),
        "gi" => (0, 3),
        "ti" => (0, 4),
        _ => {
            let packets = if bare == Bare::Bytes { "" } else { "; p for packets" };
            return Err(UnitError::new(
                input,
                format!(
                    "unknown size unit '{unit}' (use k, M, G, T for powers of 1000, KiB, MiB, GiB, TiB for \
                     powers of 1024{packets})"
                ),
            ));
        }
    };
    let bytes = number.value(exp10, 1024f64.powi(binary)).round();
    if !(0.0..=u64::MAX as f64).contains(&bytes) || bytes == u64::MAX as f64 {
        return Err(UnitError::new(input, "the size is out of range"));
    }
    Ok(Amount::Bytes(bytes as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_in_binary_units() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(150 << 20), "150 MiB");
    }

    #[test]
    fn units_mean_what_they_say() {
        let table = [
            ("1000", 1000),
            ("1k", 1000),
            ("1K", 1000),
            ("1kB", 1000),
            ("1M", 1_000_000),
            ("1MB", 1_000_000),
            ("1mb", 1_000_000),
            ("2GB", 2_000_000_000),
            ("1.5G", 1_500_000_000),
            ("1T", 1_000_000_000_000),
            ("1Ki", 1024),
            ("1KiB", 1024),
            ("10 MiB", 10 << 20),
            ("1.5GiB", 3 << 29),
            ("1500b", 1500),
            ("1500 bytes", 1500),
            ("0", 0),
        ];
        for (text, bytes) in table {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn packets_where_the_flag_counts_them() {
        assert_eq!(parse_amount("100p", Bare::Packets), Ok(Amount::Packets(100)));
        assert_eq!(parse_amount("100", Bare::Packets), Ok(Amount::Packets(100)));
        assert_eq!(parse_amount("100pkts", Bare::BytesOrPackets), Ok(Amount::Packets(100)));
        assert_eq!(parse_amount("100", Bare::BytesOrPackets), Ok(Amount::Bytes(100)));
        assert_eq!(parse_amount("1m", Bare::Packets), Ok(Amount::Bytes(1_000_000)));
        assert!(parse_amount("1.5p", Bare::Packets).is_err());
        assert!(parse_size("100p").unwrap_err().to_string().contains("not packets"));
    }

    #[test]
    fn refusals() {
        for bad in ["ten", "5X", "", "1 parsec", "1e6", "-1", "99999999999t", "1mib/s"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
