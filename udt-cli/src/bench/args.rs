//! The command line of `udt bench` ([`Args`]) and the parsers of its values.
//!
//! Invariant: every value that parsed is one the benchmark can run: a rate limit above zero,
//! an RTT of 0-10000 ms, losses of 0-100%, a sending time of up to an hour. Values follow the
//! grammar of [`udt_units`] (`--loss 0.1%` or `0.001`; `--rtt 100ms` or `100`).

/// The changes of `--rate-steps`, as one value.
pub type RateChanges = Vec<super::steps::RateChange>;

use std::path::PathBuf;

use udt_units::TimeUnit;

use super::path::{parse_loss, ReverseLoss};
use super::system::System;

/// Arguments of `udt bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Bottleneck rates of the emulated link to test (both directions; comma-separated):
    /// 50mbit, 100mbit, 1gbit. The matrix is every rate x RTT x loss, grouped by rate; the
    /// default one (27 paths, 6 systems, 10 s per run) takes about 35 minutes.
    #[arg(long, value_name = "RATE,...", default_value = "50mbit,100mbit,200mbit", value_delimiter = ',', value_parser = parse_rate)]
    pub rate: Vec<u64>,
    /// Round-trip times to test (comma-separated; `100ms`, `0.3s`, a bare number is ms); half
    /// each way.
    #[arg(long, value_name = "TIME,...", default_value = "10,100,300", value_delimiter = ',', value_parser = parse_rtt)]
    pub rtt: Vec<f64>,
    /// Random loss rates A to B (the data direction) to test (comma-separated): `0.1%` or the
    /// fraction `0.001`; a bare number above 1 is refused (write `5%`).
    #[arg(long, value_name = "LOSS,...", default_value = "0,0.1%,1%", value_delimiter = ',', value_parser = parse_loss)]
    pub loss: Vec<f64>,
    /// Add the heavy-loss cells to the matrix: 3%, 5% and 10% random loss (each way, unless
    /// --reverse-loss says otherwise) on every rate x RTT, where BBR-like and loss-based
    /// controllers part ways.
    #[arg(long)]
    pub heavy_loss: bool,
    /// Random loss B to A (the return direction: ACKs, NAKs, ACK2, TCP's ACKs): `same` loses on
    /// each path what --loss loses A to B; a loss (`0.1%`, `0.001`) is the loss on every path
    /// (not a matrix dimension), and 0 loses data packets only.
    #[arg(long, value_name = "LOSS|same", default_value = "same", value_parser = ReverseLoss::parse)]
    pub reverse_loss: ReverseLoss,
    /// Changes of the bottleneck's rate during each run, in both directions, as factors of the
    /// path's rate from a time on (`5s:50%,10s:100%` halves it from 5 s to 10 s); each run
    /// reports its goodput per phase and how long the queueing delay took to fall back under
    /// a quarter of the RTT after each change.
    #[arg(long, value_name = "TIME:FACTOR,...", value_parser = super::steps::parse)]
    pub rate_steps: Option<RateChanges>,
    /// Jitter of the emulated link's one-way delay, each way (`1ms`; a bare number is ms):
    /// uniform in +-jitter and never reordering, as `udt netem --jitter`; 0 for none.
    #[arg(long, value_name = "TIME", default_value = "0", value_parser = parse_jitter)]
    pub jitter: f64,
    /// Time each transfer sends for (`10`, `30s`, `2m`; a bare number is seconds).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_time)]
    pub time: f64,
    /// Runs per system and path, interleaved round by round; each cell reports the run with the
    /// median goodput (the lower middle one for an even count) and lists every run's goodput.
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// Systems to run (comma-separated): udt, udt:CC (`udt cc list`), udt-file (file to file),
    /// udt4, tcp-cubic, tcp-bbr, tcp-reno, udp, and the seed papers' protocols file to file:
    /// tsunami, rbudp, fobs (ours), tsunami-ref, rbudp-ref (the original programs,
    /// interop/seed-peers.sh) [default: udt,udt:cubic,udt4,tcp-cubic,tcp-bbr,udp].
    #[arg(long, value_name = "NAME,...", value_delimiter = ',', value_parser = System::parse)]
    pub systems: Vec<System>,
    /// Also run our UDT file to file (`udt send`/`udt recv`, BLAKE3 verified) on each path.
    #[arg(long)]
    pub files: bool,
    /// Skip the shared runs (two UDT flows; UDT with TCP CUBIC).
    #[arg(long)]
    pub no_shared: bool,
    /// Shared runs on every path, not only each rate's 100 ms loss-free one.
    #[arg(long, conflicts_with = "no_shared")]
    pub shared_all: bool,
    /// Print one JSON object with every result instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write a throughput-over-time SVG per run into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// The reference UDT4 peer (default: $UDT4_PERF, else interop/build/udt4_perf).
    #[arg(long, value_name = "PATH")]
    pub udt4: Option<PathBuf>,
    /// CI mode: one path (50 Mbit/s, RTT 20 ms, no loss either way), 3 s, udt and tcp-cubic, no
    /// shared runs. Overrides --rate, --rtt, --loss, --reverse-loss, --jitter, --time, --systems.
    #[arg(long)]
    pub quick: bool,
}

fn parse_rate(s: &str) -> Result<u64, String> {
    match udt_netem::units::parse_rate(s.trim()) {
        Ok(0) => Err("the benchmark needs a rate limit (0 means unlimited)".into()),
        Ok(r) => Ok(r),
        Err(e) => Err(e.to_string()),
    }
}

/// Milliseconds: a bare number, or a time with a unit (`100ms`, `0.3s`), from 0 to `max_ms`;
/// `what` names the value in the error.
fn parse_ms_up_to(s: &str, max_ms: f64, what: &str) -> Result<f64, String> {
    let ms = udt_units::parse_time(s, Some(TimeUnit::Millis))
        .map_err(|e| e.to_string())?
        .in_unit(TimeUnit::Millis);
    if !(0.0..=max_ms).contains(&ms) {
        return Err(format!("{what} {} is not between 0 and {max_ms} ms", s.trim()));
    }
    Ok(ms)
}

/// `--rtt`: at most 10 s.
fn parse_rtt(s: &str) -> Result<f64, String> {
    parse_ms_up_to(s, 10_000.0, "RTT")
}

/// `--jitter`: at most 1 s.
fn parse_jitter(s: &str) -> Result<f64, String> {
    parse_ms_up_to(s, 1_000.0, "jitter")
}

/// Seconds: a bare number, or a time with a unit (`500ms`, `2m`); at most an hour.
fn parse_time(s: &str) -> Result<f64, String> {
    let t = udt_units::parse_time(s, Some(TimeUnit::Secs)).map_err(|e| e.to_string())?.secs();
    if !(t > 0.0 && t <= 3600.0) {
        return Err(format!("`{}` is not between 0 and 3600 seconds", s.trim()));
    }
    Ok(t)
}

/// `udt bench ARGS...` parsed, for the tests of this module and of [`super::plan`].
#[cfg(test)]
pub fn parse(argv: &[&str]) -> Result<Args, clap::Error> {
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }
    Cli::try_parse_from(std::iter::once("bench").chain(argv.iter().copied())).map(|c| c.args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.rate, vec![50_000_000, 100_000_000, 200_000_000]);
        assert_eq!(a.rtt, vec![10.0, 100.0, 300.0]);
        assert_eq!(a.loss, vec![0.0, 0.1, 1.0]);
        assert_eq!(a.reverse_loss, ReverseLoss::Same);
        assert_eq!(a.repeat, 1);
        assert_eq!(a.jitter, 0.0);
    }

    #[test]
    fn jitter_is_a_time_up_to_a_second() {
        assert_eq!(parse(&["--jitter", "1.5ms"]).unwrap().jitter, 1.5);
        assert_eq!(parse(&["--jitter", "3"]).unwrap().jitter, 3.0);
        assert!(parse(&["--jitter", "2s"]).is_err());
        assert!(parse(&["--jitter", "-1ms"]).is_err());
    }

    #[test]
    fn lists_and_units() {
        let a = parse(&["--rate", "100mbit", "--rtt", "50ms,0.2s,30", "--loss", "0.5%,0.001"]).unwrap();
        assert_eq!((a.rate, a.rtt, a.loss), (vec![100_000_000], vec![50.0, 200.0, 30.0], vec![0.5, 0.1]));
        assert_eq!(parse(&["--rate", "100mbps"]).unwrap().rate, vec![100_000_000]);
        assert_eq!(parse(&["--time", "2m"]).unwrap().time, 120.0);
        assert_eq!(parse(&["--rate", "1gbit, 10m"]).unwrap().rate, vec![1_000_000_000, 10_000_000]);
        assert_eq!(parse(&["--reverse-loss", "0"]).unwrap().reverse_loss, ReverseLoss::Percent(0.0));
        assert_eq!(parse(&["--reverse-loss", "0.1%"]).unwrap().reverse_loss, ReverseLoss::Percent(0.1));
        assert_eq!(parse(&["--repeat", "3"]).unwrap().repeat, 3);
    }

    #[test]
    fn refusals() {
        for argv in [
            &["--rate", "0"][..],
            &["--rate", "100mbit,0"],
            &["--rate", "100MB"],
            &["--systems", "sctp"],
            &["--loss", "101%"],
            &["--loss", "5"],
            &["--reverse-loss", "0,1"],
            &["--reverse-loss", "-1"],
            &["--rtt", "20000"],
            &["--time", "0"],
            &["--no-shared", "--shared-all"],
            &["--repeat", "0"],
            &["--repeat", "21"],
        ] {
            assert!(parse(argv).is_err(), "{argv:?} was accepted");
        }
    }
}
