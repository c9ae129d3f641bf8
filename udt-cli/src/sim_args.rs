//! The arguments of `udt sim` and the parsers of its quantities (the grammar of [`udt_units`]),
//! shared by the scenarios (`sim.rs`) and the seed papers' experiments (`sim_seeds.rs`).

use std::path::PathBuf;

use udt_units::{Amount, Bare, RateUnit, TimeUnit};

/// Arguments of `udt sim`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario name (`list` shows them): fig4-2, fig4-3, fig4-4, ..., or `sweep`.
    pub scenario: String,
    /// `sweep`: number of random scenarios (default 20).
    #[arg(long, value_name = "N")]
    pub count: Option<usize>,
    /// `sweep`: cap on the data packets of one run (runs that would exceed it are shortened).
    #[arg(long, value_name = "N")]
    pub max_packets: Option<u64>,
    /// Print one JSON object (parameters, each flow's throughput, the measures) on stdout; the
    /// table goes to standard error.
    #[arg(long)]
    pub json: bool,
    /// Write a throughput-over-time plot per flow (SVG).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also print one line per flow.
    #[arg(long)]
    pub flows_table: bool,
    /// Seed (default 1, or UDT_SIM_SEED).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The thesis' durations and full grids instead of the short defaults.
    #[arg(long)]
    pub full: bool,
    /// RED instead of DropTail at the bottleneck.
    #[arg(long)]
    pub red: bool,
    /// Every receiver behaves as a UDT4 4.11 one: it ignores the policy offer, so the sender
    /// gets UDT4's reports only (no queueing-delay reports, no progress ACKs).
    #[arg(long)]
    pub udt4_receiver: bool,
    /// Bottleneck capacity: a rate (`100mbit`, `1gbit`, `500m`); a bare number is Mb/s.
    #[arg(long = "rate", visible_alias = "bw", value_name = "RATE", value_parser = parse_mbps)]
    pub bw: Option<f64>,
    /// Round-trip propagation time (`100ms`, `0.3s`); a bare number is ms.
    #[arg(long, value_name = "TIME", value_parser = parse_rtt_ms)]
    pub rtt: Option<f64>,
    /// Random loss rate of the bottleneck: `1%` or the fraction `0.01`.
    #[arg(long, value_name = "LOSS", value_parser = parse_loss)]
    pub loss: Option<f64>,
    /// Mean loss burst in packets (Gilbert-Elliott loss), for both directions.
    #[arg(long, value_name = "PKTS", value_parser = parse_burst)]
    pub burst: Option<f64>,
    /// Random loss rate of the way back from the receiver (ACKs, NAKs): `1%` or `0.01`.
    #[arg(long, value_name = "LOSS", value_parser = parse_loss)]
    pub reverse_loss: Option<f64>,
    /// Jitter of the bottleneck's one-way delay, each way (`2ms`; a bare number is ms): uniform
    /// in +-jitter, never reordering, as the emulator's `--jitter`.
    #[arg(long, value_name = "TIME", value_parser = parse_rtt_ms)]
    pub jitter: Option<f64>,
    /// Bottleneck queue in packets (`100` or `100p`; default max(BDP, 10)).
    #[arg(long, value_name = "PKTS", value_parser = parse_queue)]
    pub queue: Option<usize>,
    /// Number of flows.
    #[arg(long, value_name = "N")]
    pub flows: Option<usize>,
    /// Virtual time per run (`30s`, `2m`; a bare number is seconds). `sweep`: every scenario's,
    /// instead of 100 RTTs, at least 10 s.
    #[arg(long, value_name = "TIME", value_parser = parse_secs)]
    pub time: Option<f64>,
    /// Congestion control of the UDT flows, `NAME[:key=value,...]` from the catalog (`udt cc
    /// list`): `udt`, `daimd:noisy=true`, `newreno:ack=1`, `blast:rate=50m`, ... Default: the
    /// scenario's (`udt_cc::DEFAULT_CC` unless the scenario is about another algorithm).
    /// `sweep` takes several, comma-separated (`--cc udt,bbr,cubic,daimd`): each runs the same
    /// scenarios, and their distributions print side by side.
    #[arg(long, value_name = "SPEC")]
    pub cc: Option<String>,
    /// Runs in parallel.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Capture the bottleneck of the first run to this pcap file.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<String>,
}

/// `--rate`: Mb/s, exactly as a bare number would give them (`100mbit` = `100`).
fn parse_mbps(s: &str) -> Result<f64, String> {
    let mbps = udt_units::parse_rate_in(s, RateUnit::MbitPerSec).map_err(|e| e.to_string())?;
    if mbps <= 0.0 {
        return Err("the bottleneck rate must be above zero".into());
    }
    Ok(mbps)
}

/// `--rtt`, `--jitter`: milliseconds.
fn parse_rtt_ms(s: &str) -> Result<f64, String> {
    Ok(udt_units::parse_time(s, Some(TimeUnit::Millis)).map_err(|e| e.to_string())?.in_unit(TimeUnit::Millis))
}

/// `--time`: positive seconds.
fn parse_secs(s: &str) -> Result<f64, String> {
    let secs = udt_units::parse_time(s, Some(TimeUnit::Secs)).map_err(|e| e.to_string())?.secs();
    if !(secs > 0.0 && secs.is_finite()) {
        return Err("the time must be positive".into());
    }
    Ok(secs)
}

/// `--loss`, `--reverse-loss`: a fraction below 1.
fn parse_loss(s: &str) -> Result<f64, String> {
    let p = udt_units::parse_fraction(s).map_err(|e| e.to_string())?;
    if p >= 1.0 {
        return Err("the loss rate must be below 100%".into());
    }
    Ok(p)
}

/// `--burst`: a mean burst length in packets (`3` or `3p`), not negative.
fn parse_burst(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let n = t.strip_suffix('p').unwrap_or(t);
    match n.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err("a mean burst is a number of packets, like 3 or 3p".into()),
    }
}

/// `--queue`: a packet count.
fn parse_queue(s: &str) -> Result<usize, String> {
    match udt_units::parse_amount(s, Bare::Packets).map_err(|e| e.to_string())? {
        Amount::Packets(n) => usize::try_from(n).map_err(|_| "too many packets".into()),
        Amount::Bytes(_) => Err("the simulator's queue counts packets: write e.g. 100 or 100p".into()),
    }
}
