//! Parsing of the command line's quantities: rates, durations, probabilities, queue limits and
//! Gilbert-Elliott parameters.
//!
//! The grammar is [`udt_units`]' (shared by every `udt` subcommand); this module adds the
//! emulator's ranges. Invariants: no parser panics on any input; every error names the input
//! and says what a valid value looks like. Rates are bits per second of IP packets (a bare
//! number is bits per second); sizes say what they mean (`1mb` = 10^6 bytes, `1mib` = 2^20).

use std::time::Duration;

use udt_units::{Amount, Bare, TimeUnit};

use crate::config::{GeParams, QueueLimit};
use crate::schedule::RateStep;

/// A value on the command line that could not be understood.
pub type ParseError = udt_units::UnitError;

/// A link rate in bits per second; `0` means unlimited.
///
/// The rate grammar of [`udt_units`]: `100mbit`, `1gbit`, `1.5gbit`, `500kbit`, `10m`,
/// `10mbps` (bits: tc would read it as bytes), `940Mb/s`, `10MB/s` (bytes per second), and
/// bare numbers (bits per second). The emulator takes 1 kbit/s to 10 Tbit/s.
pub fn parse_rate(input: &str) -> Result<u64, ParseError> {
    let bits = udt_units::parse_rate(input)?;
    if bits > 10_000_000_000_000 {
        return Err(ParseError::new(input, "rates above 10 Tbit/s are not supported"));
    }
    if bits != 0 && bits < 1000 {
        return Err(ParseError::new(input, "rates below 1 kbit/s are not supported (0 means unlimited)"));
    }
    Ok(bits)
}

/// Changes of the bottleneck rate: `TIME:RATE` pairs, comma-separated, in increasing time
/// (`10s:25mbit,20s:50mbit`: from 10 s on 25 Mbit/s, from 20 s 50 Mbit/s); a bare time is
/// seconds. The times count from the start of the run.
pub fn parse_rate_steps(input: &str) -> Result<Vec<RateStep>, ParseError> {
    let mut steps: Vec<RateStep> = Vec::new();
    for pair in input.split(',') {
        let Some((at, rate)) = pair.split_once(':') else {
            return Err(ParseError::new(pair, "a rate step is TIME:RATE, e.g. 10s:25mbit"));
        };
        let at = udt_units::parse_duration(at.trim(), Some(TimeUnit::Secs))?;
        let rate_bps = parse_rate(rate.trim())?;
        if rate_bps == 0 {
            return Err(ParseError::new(pair, "a rate step sets a rate above 0"));
        }
        if steps.last().is_some_and(|s| s.at >= at) {
            return Err(ParseError::new(input, "rate steps come in increasing time"));
        }
        steps.push(RateStep { at, rate_bps });
    }
    Ok(steps)
}

/// A delay such as `50ms`, `1s`, `250us` (or `250µs`), `1.5ms`, `100ns`: a unit is required
/// (`0` needs none), at most one hour.
pub fn parse_duration(input: &str) -> Result<Duration, ParseError> {
    let d = udt_units::parse_duration(input, None)?;
    if d > Duration::from_secs(3600) {
        return Err(ParseError::new(input, "durations above one hour are not supported"));
    }
    Ok(d)
}

/// A run time in seconds, as a bare number (`10`, `2.5`) or with a time unit (`500ms`, `2m`).
pub fn parse_seconds(input: &str) -> Result<Duration, ParseError> {
    let d = udt_units::parse_duration(input, Some(TimeUnit::Secs))?;
    if d.is_zero() {
        return Err(ParseError::new(input, "the time must be positive"));
    }
    Ok(d)
}

/// A probability: `0.1%` is 0.001, and so is `0.001`; a bare number above 1 is refused as
/// ambiguous (write `5%`).
pub fn parse_probability(input: &str) -> Result<f64, ParseError> {
    udt_units::parse_fraction(input)
}

/// A DropTail queue limit: `1000p`, `1000pkt` or a bare `1000` in packets; `1mb` (10^6),
/// `64kb`, `1500b`, `1mib` (2^20) in bytes.
pub fn parse_queue(input: &str) -> Result<QueueLimit, ParseError> {
    match udt_units::parse_amount(input, Bare::Packets)? {
        Amount::Packets(n) if (1..=10_000_000).contains(&n) => Ok(QueueLimit::Packets(n as u32)),
        Amount::Packets(_) => {
            Err(ParseError::new(input, "a packet limit is a whole number from 1 to 10000000"))
        }
        Amount::Bytes(n) if (1..=16_000_000_000).contains(&n) => Ok(QueueLimit::Bytes(n)),
        Amount::Bytes(_) => Err(ParseError::new(input, "a byte limit is from 1 byte to 16 GB")),
    }
}

/// Gilbert-Elliott parameters `p,r[,loss_bad[,loss_good]]`, each a probability: `p` moves the
/// chain from good to bad, `r` from bad to good; `loss_bad` (default 100%) and `loss_good`
/// (default 0%) are the loss probabilities in each state (netem's `1-h` and `1-k`).
pub fn parse_ge(input: &str) -> Result<GeParams, ParseError> {
    let parts: Vec<&str> = input.split(',').map(str::trim).collect();
    if !(2..=4).contains(&parts.len()) {
        return Err(ParseError::new(
            input,
            "expected p,r[,loss_bad[,loss_good]], e.g. 1%,30% or 1%,30%,90%,0%",
        ));
    }
    let prob = |i: usize, default: f64| -> Result<f64, ParseError> {
        match parts.get(i) {
            Some(s) => parse_probability(s).map_err(|e| ParseError::new(input, format!("'{s}': {e}"))),
            None => Ok(default),
        }
    };
    let params =
        GeParams { p: prob(0, 0.0)?, r: prob(1, 0.0)?, loss_bad: prob(2, 1.0)?, loss_good: prob(3, 0.0)? };
    if params.r == 0.0 && params.p > 0.0 {
        return Err(ParseError::new(
            input,
            "r must be positive, or the chain stays in the bad state forever",
        ));
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100mbit"), Ok(100_000_000));
        assert_eq!(parse_rate("1gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate("1.5gbit"), Ok(1_500_000_000));
        assert_eq!(parse_rate("500kbit"), Ok(500_000));
        assert_eq!(parse_rate("2000000"), Ok(2_000_000));
        assert_eq!(parse_rate("10M"), Ok(10_000_000));
        assert_eq!(parse_rate("940 Mb/s"), Ok(940_000_000));
        assert_eq!(parse_rate("0"), Ok(0));
        assert_eq!(parse_rate("100mbps"), Ok(100_000_000));
        assert_eq!(parse_rate("10MB/s"), Ok(80_000_000));
        for bad in ["", "mbit", "100MB", "100 furlongs", "1..5gbit", "-5mbit", "10", "100tbit"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("50ms"), Ok(Duration::from_millis(50)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["50", "ms", "5 parsecs", "2h", "99999s", "61m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_seconds("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_seconds("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_seconds("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_seconds("0").is_err());
    }

    #[test]
    fn probabilities() {
        assert_eq!(parse_probability("0.1%"), Ok(0.001));
        assert_eq!(parse_probability("0.001"), Ok(0.001));
        assert_eq!(parse_probability("100%"), Ok(1.0));
        assert_eq!(parse_probability("0"), Ok(0.0));
        assert_eq!(parse_probability("0.5"), Ok(0.5));
        assert!(parse_probability("5").unwrap_err().to_string().contains("5%"));
        for bad in ["5", "101%", "x", "1%%", "-1%"] {
            assert!(parse_probability(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn queues() {
        assert_eq!(parse_queue("1000p"), Ok(QueueLimit::Packets(1000)));
        assert_eq!(parse_queue("1000"), Ok(QueueLimit::Packets(1000)));
        assert_eq!(parse_queue("1MB"), Ok(QueueLimit::Bytes(1_000_000)));
        assert_eq!(parse_queue("64kib"), Ok(QueueLimit::Bytes(65536)));
        assert_eq!(parse_queue("1500b"), Ok(QueueLimit::Bytes(1500)));
        assert_eq!(parse_queue("1m"), Ok(QueueLimit::Bytes(1_000_000)));
        for bad in ["0p", "1.5p", "10 parsecs", "0b", ""] {
            assert!(parse_queue(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn gilbert_elliott() {
        let ge = parse_ge("1%,30%").unwrap();
        assert_eq!((ge.p, ge.r, ge.loss_bad, ge.loss_good), (0.01, 0.3, 1.0, 0.0));
        let ge = parse_ge("0.01, 0.3, 90%, 0.1%").unwrap();
        assert_eq!((ge.loss_bad, ge.loss_good), (0.9, 0.001));
        for bad in ["1%", "1%,2%,3%,4%,5%", "1%,0", "x,y"] {
            assert!(parse_ge(bad).is_err(), "{bad}");
        }
    }
}
