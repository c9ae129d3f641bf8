//! The one grammar of the quantities the `udt` tools take on their command lines and in
//! congestion-control specifications (`--cc blast:rate=..`): rates, sizes, packet counts,
//! times and loss fractions.
//!
//! Every quantity is a decimal number (`10`, `1.5`, `.5`; no sign, no exponent), optional
//! spaces, and a unit:
//!
//! - **Rates** ([`parse_rate`]): bits per second with SI prefixes, `k`, `m`, `g`, `t` (powers
//!   of 1000, any case), alone or followed by `bit`, `bits`, `bit/s`, `b/s` or `bps`:
//!   `100mbit`, `1gbit`, `500m`, `10mbps`, `940 Mb/s`. Bytes per second need an upper-case `B`
//!   with `/s` or `ps`, or the word: `10MB/s`, `10MBps`, `10 MiB/s` (IEC prefixes only with
//!   bytes), `10 mbyte/s`. A lower-case `b` is a bit and an upper-case `B` a byte; `100MB` or
//!   `100mb` without `/s` is refused, since it reads as a size. A bare number is in the unit
//!   the flag documents ([`RateUnit`]).
//! - **Sizes** ([`parse_size`], [`parse_amount`]): bytes, with SI prefixes as powers of 1000
//!   (`1k`, `1M`, `1MB` = 10^6 bytes) and IEC prefixes as powers of 1024 (`1Ki`, `1MiB` =
//!   2^20 bytes), any case, `b`/`byte`/`bytes` optional. Where a flag counts packets, `100p`
//!   (also `pkt`, `pkts`, `packets`) is a packet count. A bare number is bytes or packets, as
//!   the flag documents ([`Bare`]).
//! - **Times** ([`parse_time`], [`parse_duration`]): `ns`, `us` (`µs`), `ms`, `s`, `m` (minutes),
//!   `h`, `d`, with their long forms (`sec`, `min`, `hour`, ...). A bare number is in the unit
//!   the flag documents ([`TimeUnit`]), or refused (except `0`) where the flag requires a unit.
//! - **Loss** and other probabilities ([`parse_fraction`]): `0.5%` or the fraction `0.005`. A
//!   bare number above 1 is refused as ambiguous (did `5` mean 5%?), with a message suggesting
//!   `5%`.
//!
//! Invariants: no parser panics on any input; every error says what a valid value looks like;
//! scaling by a power of ten is exact (the number is rescaled as decimal text, so `1%` is the
//! same `f64` as `0.01` and `0.3s` the same as `300ms`).

mod decimal;
mod fraction;
mod rate;
mod size;
mod time;

pub use fraction::{parse_fraction, Fraction};
pub use rate::{parse_rate, parse_rate_in, RateUnit};
pub use size::{format_bytes, parse_amount, parse_size, Amount, Bare};
pub use time::{parse_duration, parse_time, Time, TimeUnit};

use std::fmt;

/// A quantity that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    input: String,
    reason: String,
}

impl UnitError {
    /// An error about `input`: `reason` says why and what a valid value looks like.
    pub fn new(input: &str, reason: impl Into<String>) -> Self {
        Self { input: input.to_owned(), reason: reason.into() }
    }

    /// The text that could not be parsed.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Why, and what a valid value looks like (without the input: see [`UnitError::input`]).
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for UnitError {
    /// The reason only: clap already quotes the input and the option in its message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for UnitError {}
