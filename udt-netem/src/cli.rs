//! `udt netem`: the emulator from the command line. [`Args`] is a clap argument group the
//! `udt` binary mounts as a subcommand; [`run`] sets up, forwards until Ctrl-C, SIGTERM or
//! `--time`, prints the counters and cleans up.
//!
//! Invariants: every impairment option has a `-back` twin for the B to A direction, which
//! defaults to the A to B value when not given; SIGINT, SIGTERM and SIGHUP only set a flag
//! (a second one exits at once), so the namespaces are removed on the way out.

use crate::schedule::RateSteps;
use std::io::Write;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use crate::config::{EmulatorConfig, GeParams, JitterDist, LinkConfig, Loss, QueueLimit};
use crate::emulator::{check_privileges, Emulator};
use crate::stats::EmulatorStats;
use crate::units;

/// Emulate a WAN link (rate, queue, delay, jitter, loss, reordering, duplication, corruption)
/// between two network namespaces joined by TUN devices. Needs root.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Side A talks to side B through the emulator: run programs with `ip netns exec NS ...`.
The B-to-A direction has the same impairments as A-to-B unless given with -back options.
Units: rates 100mbit, 1.5gbit, 500kbit (bits/s); times 50ms, 250us, 1s; probabilities 0.1% or
0.001; queues 1000p (packets) or 1mb, 64kib (bytes). Example:
  udt netem --rate 100mbit --delay 25ms --queue 500p --loss 0.01% --time 60")]
pub struct Args {
    /// Network namespace of side A (created, and deleted at exit, unless it exists).
    #[arg(long, default_value = "udtA", value_name = "NAME")]
    pub ns_a: String,
    /// Network namespace of side B.
    #[arg(long, default_value = "udtB", value_name = "NAME")]
    pub ns_b: String,
    /// Address of side A (private range).
    #[arg(long, default_value = "10.213.0.1", value_name = "IPV4")]
    pub addr_a: Ipv4Addr,
    /// Address of side B (private range).
    #[arg(long, default_value = "10.213.0.2", value_name = "IPV4")]
    pub addr_b: Ipv4Addr,
    /// MTU of the emulated link.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// Stop after this long (seconds, or with a unit: 500ms); default: until Ctrl-C.
    #[arg(long, value_parser = units::parse_seconds, value_name = "SECS")]
    pub time: Option<Duration>,
    /// Print the final configuration and counters as JSON on standard output.
    #[arg(long)]
    pub json: bool,
    /// Seed of the impairments' random numbers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run the forwarders with real-time priority (SCHED_FIFO 10): releases stay on time on a
    /// busy machine, at the cost of preempting other work.
    #[arg(long)]
    pub realtime: bool,
    /// Transmit queue length of the TUN devices (fills only when the emulator falls behind).
    #[arg(long, default_value_t = 1000, value_name = "PACKETS")]
    pub tun_txqueuelen: u32,
    /// A-to-B impairments (and B-to-A unless overridden).
    #[command(flatten)]
    pub forward: ForwardArgs,
    /// B-to-A overrides.
    #[command(flatten)]
    pub back: BackArgs,
}

/// Impairments of the A-to-B direction; also the B-to-A defaults.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Impairments (A to B, and B to A unless overridden)")]
pub struct ForwardArgs {
    /// Bottleneck rate in bits per second, e.g. 100mbit, 1gbit, 10mbps; bytes as 10MB/s (0:
    /// unlimited, the default).
    #[arg(long, value_parser = units::parse_rate, value_name = "RATE")]
    pub rate: Option<u64>,
    /// Changes of the bottleneck rate while the emulator runs: `TIME:RATE,...` in increasing
    /// time since it started (`10s:25mbit,20s:50mbit` halves a 50mbit link from 10 s to 20 s);
    /// B to A too unless --rate-back is given.
    #[arg(long, value_parser = units::parse_rate_steps, value_name = "STEPS")]
    pub rate_steps: Option<RateSteps>,
    /// Bottleneck DropTail queue limit: 1000p or a bare 1000 (packets, the default 1000p), or
    /// bytes like 1mb (10^6) or 1mib (2^20), counting what waits behind the packet being
    /// serialized.
    #[arg(long, value_parser = units::parse_queue, value_name = "LIMIT")]
    pub queue: Option<QueueLimit>,
    /// One-way delay, e.g. 50ms.
    #[arg(long, value_parser = units::parse_duration, value_name = "TIME")]
    pub delay: Option<Duration>,
    /// Delay jitter (never reorders by itself), e.g. 1ms.
    #[arg(long, value_parser = units::parse_duration, value_name = "TIME")]
    pub jitter: Option<Duration>,
    /// Jitter distribution.
    #[arg(long, value_enum, value_name = "DIST")]
    pub jitter_dist: Option<JitterDist>,
    /// Random (Bernoulli) loss: 0.1% or the fraction 0.001 (a bare number above 1 is refused).
    #[arg(long, value_parser = units::parse_probability, value_name = "P", conflicts_with = "ge")]
    pub loss: Option<f64>,
    /// Gilbert-Elliott burst loss `p,r[,loss_bad[,loss_good]]`, e.g. 1%,30% (mean burst 1/r).
    #[arg(long, value_parser = units::parse_ge, value_name = "P,R[,BAD[,GOOD]]")]
    pub ge: Option<GeParams>,
    /// Probability that a packet is held back so later ones overtake it.
    #[arg(long, value_parser = units::parse_probability, value_name = "P")]
    pub reorder: Option<f64>,
    /// Extra delay of a reordered packet (default 1ms).
    #[arg(long, value_parser = units::parse_duration, value_name = "TIME")]
    pub reorder_delay: Option<Duration>,
    /// Duplication probability.
    #[arg(long, value_parser = units::parse_probability, value_name = "P")]
    pub duplicate: Option<f64>,
    /// Corruption probability (one bit flipped past the IP header).
    #[arg(long, value_parser = units::parse_probability, value_name = "P")]
    pub corrupt: Option<f64>,
}

/// Overrides for the B-to-A direction.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "B to A overrides")]
pub struct BackArgs {
    /// B-to-A bottleneck rate.
    #[arg(long, value_parser = units::parse_rate, value_name = "RATE")]
    pub rate_back: Option<u64>,
    /// B-to-A queue limit.
    #[arg(long, value_parser = units::parse_queue, value_name = "LIMIT")]
    pub queue_back: Option<QueueLimit>,
    /// B-to-A one-way delay.
    #[arg(long, value_parser = units::parse_duration, value_name = "TIME")]
    pub delay_back: Option<Duration>,
    /// B-to-A jitter.
    #[arg(long, value_parser = units::parse_duration, value_name = "TIME")]
    pub jitter_back: Option<Duration>,
    /// B-to-A jitter distribution.
    #[arg(long, value_enum, value_name = "DIST")]
    pub jitter_dist_back: Option<JitterDist>,
    /// B-to-A Bernoulli loss.
    #[arg(long, value_parser = units::parse_probability, value_name = "P", conflicts_with = "ge_back")]
    pub loss_back: Option<f64>,
    /// B-to-A Gilbert-Elliott loss.
    #[arg(long, value_parser = units::parse_ge, value_name = "P,R[,BAD[,GOOD]]")]
    pub ge_back: Option<GeParams>,
    /// B-to-A reordering probability.
    #[arg(long, value_parser = units::parse_probability, value_name = "P")]
    pub reorder_back: Option<f64>,
    /// B-to-A reordering delay.
    #[arg(long, value_parser = units::parse_duration, value_name = "TIME")]
    pub reorder_delay_back: Option<Duration>,
    /// B-to-A duplication probability.
    #[arg(long, value_parser = units::parse_probability, value_name = "P")]
    pub duplicate_back: Option<f64>,
    /// B-to-A corruption probability.
    #[arg(long, value_parser = units::parse_probability, value_name = "P")]
    pub corrupt_back: Option<f64>,
}

impl ForwardArgs {
    fn link(&self) -> LinkConfig {
        let d = LinkConfig::default();
        LinkConfig {
            rate_bps: self.rate.unwrap_or(d.rate_bps),
            queue: self.queue.unwrap_or(d.queue),
            delay: self.delay.unwrap_or(d.delay),
            jitter: self.jitter.unwrap_or(d.jitter),
            jitter_dist: self.jitter_dist.unwrap_or(d.jitter_dist),
            loss: loss_model(self.loss, self.ge).unwrap_or(d.loss),
            reorder: self.reorder.unwrap_or(d.reorder),
            reorder_delay: self.reorder_delay.unwrap_or(d.reorder_delay),
            duplicate: self.duplicate.unwrap_or(d.duplicate),
            corrupt: self.corrupt.unwrap_or(d.corrupt),
            rate_steps: self.rate_steps.clone().unwrap_or_default(),
        }
    }
}

impl BackArgs {
    /// `forward` with this direction's overrides applied.
    fn link(&self, forward: &LinkConfig) -> LinkConfig {
        let f = forward;
        LinkConfig {
            rate_bps: self.rate_back.unwrap_or(f.rate_bps),
            queue: self.queue_back.unwrap_or(f.queue),
            delay: self.delay_back.unwrap_or(f.delay),
            jitter: self.jitter_back.unwrap_or(f.jitter),
            jitter_dist: self.jitter_dist_back.unwrap_or(f.jitter_dist),
            loss: loss_model(self.loss_back, self.ge_back).unwrap_or(f.loss),
            reorder: self.reorder_back.unwrap_or(f.reorder),
            reorder_delay: self.reorder_delay_back.unwrap_or(f.reorder_delay),
            duplicate: self.duplicate_back.unwrap_or(f.duplicate),
            corrupt: self.corrupt_back.unwrap_or(f.corrupt),
            rate_steps: if self.rate_back.is_some() { Vec::new() } else { f.rate_steps.clone() },
        }
    }
}

fn loss_model(loss: Option<f64>, ge: Option<GeParams>) -> Option<Loss> {
    match (loss, ge) {
        (_, Some(ge)) => Some(Loss::GilbertElliott(ge)),
        (Some(0.0), None) => Some(Loss::None),
        (Some(p), None) => Some(Loss::Bernoulli { p }),
        (None, None) => None,
    }
}

impl Args {
    /// The emulator configuration these arguments describe (validated).
    pub fn config(&self) -> anyhow::Result<EmulatorConfig> {
        let a_to_b = self.forward.link();
        let b_to_a = self.back.link(&a_to_b);
        let config = EmulatorConfig {
            ns_a: self.ns_a.clone(),
            ns_b: self.ns_b.clone(),
            addr_a: self.addr_a,
            addr_b: self.addr_b,
            mtu: self.mtu,
            a_to_b,
            b_to_a,
            seed: self.seed,
            realtime: self.realtime.then_some(10),
            tun_txqueuelen: self.tun_txqueuelen,
            ..EmulatorConfig::default()
        };
        config.validate()?;
        Ok(config)
    }
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct Report<'a> {
    config: &'a EmulatorConfig,
    stats: &'a EmulatorStats,
}

/// Runs `udt netem`: sets up, forwards until a signal or `--time`, prints the counters and
/// cleans up.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let config = args.config()?;
    check_privileges()?;
    let term = Arc::new(AtomicBool::new(false));
    let signals = install_signal_flag(&term)?;
    let result = run_until(args, config, &term);
    for id in signals {
        signal_hook::low_level::unregister(id);
    }
    result
}

/// SIGINT, SIGTERM and SIGHUP set `term`; a second one while it is set exits at once.
fn install_signal_flag(term: &Arc<AtomicBool>) -> anyhow::Result<Vec<signal_hook::SigId>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut ids = Vec::new();
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        ids.push(signal_hook::flag::register_conditional_shutdown(sig, 130, term.clone())?);
        ids.push(signal_hook::flag::register(sig, term.clone())?);
    }
    Ok(ids)
}

fn run_until(args: &Args, config: EmulatorConfig, term: &AtomicBool) -> anyhow::Result<()> {
    let handle = Emulator::start(config)?;
    let mut info: Box<dyn Write> =
        if args.json { Box::new(std::io::stderr()) } else { Box::new(std::io::stdout()) };
    describe(&mut *info, &handle, args.time).context("cannot write to the terminal")?;
    let started = Instant::now();
    let mut failed = Ok(());
    while !term.load(Relaxed) && args.time.is_none_or(|t| started.elapsed() < t) {
        std::thread::sleep(Duration::from_millis(20));
        if let Err(e) = handle.check() {
            failed = Err(e);
            break;
        }
    }
    let config = handle.config().clone();
    let stats = handle.stop()?;
    failed?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&Report { config: &config, stats: &stats })?);
    } else {
        println!("after {:.1} s:", stats.elapsed_s);
        println!("A to B ({} -> {}):\n{}", config.addr_a, config.addr_b, stats.a_to_b);
        println!("B to A ({} -> {}):\n{}", config.addr_b, config.addr_a, stats.b_to_a);
    }
    for (dir, d) in [("A to B", &stats.a_to_b), ("B to A", &stats.b_to_a)] {
        if d.fell_behind() {
            eprintln!(
                "udt netem: warning: {dir} fell behind (p99 release error {:.0} us, kernel drops {}): \
                 the machine could not keep up with this load, so delays and losses were larger \
                 than configured",
                d.release_error.p99_us,
                d.tun_drops.unwrap_or(0)
            );
        }
    }
    Ok(())
}

fn describe(out: &mut dyn Write, h: &crate::EmulatorHandle, time: Option<Duration>) -> std::io::Result<()> {
    let c = h.config();
    writeln!(out, "udt netem: namespaces {} and {} joined through this process", c.ns_a, c.ns_b)?;
    writeln!(out, "  A: netns {}, {} {} (peer {})", c.ns_a, c.dev_a, c.addr_a, c.addr_b)?;
    writeln!(out, "  B: netns {}, {} {} (peer {})", c.ns_b, c.dev_b, c.addr_b, c.addr_a)?;
    writeln!(out, "  A to B: {}", c.a_to_b)?;
    writeln!(out, "  B to A: {}", c.b_to_a)?;
    let owned = h.owned_namespaces();
    if owned.len() < 2 {
        writeln!(out, "  (existing namespaces are used as they are and kept; created: {owned:?})")?;
    }
    writeln!(out, "Try, in other terminals:")?;
    writeln!(out, "  ip netns exec {} iperf3 -s", c.ns_b)?;
    writeln!(out, "  ip netns exec {} iperf3 -c {}", c.ns_a, c.addr_b)?;
    writeln!(out, "  ip netns exec {} ping {}", c.ns_a, c.addr_b)?;
    match time {
        Some(t) => writeln!(out, "Forwarding for {:.1} s (or until Ctrl-C).", t.as_secs_f64())?,
        None => writeln!(out, "Forwarding until Ctrl-C.")?,
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(argv: &[&str]) -> Result<Args, clap::Error> {
        Cli::try_parse_from(std::iter::once("netem").chain(argv.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn rate_steps_apply_to_both_directions_unless_the_back_rate_is_given() {
        use crate::schedule::RateStep;
        let a = parse(&["--rate", "50mbit", "--rate-steps", "10s:25mbit,20:50mbit"]).unwrap();
        let c = a.config().unwrap();
        let steps = vec![
            RateStep { at: Duration::from_secs(10), rate_bps: 25_000_000 },
            RateStep { at: Duration::from_secs(20), rate_bps: 50_000_000 },
        ];
        assert_eq!(c.a_to_b.rate_steps, steps);
        assert_eq!(c.b_to_a.rate_steps, steps);
        let a = parse(&["--rate", "50mbit", "--rate-steps", "10s:25mbit", "--rate-back", "1gbit"]).unwrap();
        assert!(a.config().unwrap().b_to_a.rate_steps.is_empty());
        for bad in ["10s", "10s:0", "20s:1mbit,10s:2mbit", "x:1mbit"] {
            assert!(parse(&["--rate", "50mbit", "--rate-steps", bad]).is_err(), "{bad}");
        }
        let a = parse(&["--rate-steps", "10s:25mbit"]).unwrap();
        assert!(a.config().is_err(), "steps need a rate to start from");
    }

    #[test]
    fn back_defaults_to_forward_and_overrides_apply() {
        let a = parse(&["--rate", "100mbit", "--delay", "50ms", "--loss", "0.1%", "--delay-back", "10ms"])
            .unwrap();
        let c = a.config().unwrap();
        assert_eq!(c.a_to_b.rate_bps, 100_000_000);
        assert_eq!(c.b_to_a.rate_bps, 100_000_000);
        assert_eq!(c.a_to_b.delay, Duration::from_millis(50));
        assert_eq!(c.b_to_a.delay, Duration::from_millis(10));
        assert_eq!(c.b_to_a.loss, Loss::Bernoulli { p: 0.001 });
        let a = parse(&["--ge", "1%,25%", "--loss-back", "0", "--queue", "1mb", "--time", "2"]).unwrap();
        let c = a.config().unwrap();
        assert!(matches!(c.a_to_b.loss, Loss::GilbertElliott(_)));
        assert_eq!(c.b_to_a.loss, Loss::None);
        assert_eq!(c.b_to_a.queue, QueueLimit::Bytes(1_000_000));
        assert_eq!(a.time, Some(Duration::from_secs(2)));
        assert_eq!((c.ns_a.as_str(), c.ns_b.as_str()), ("udtA", "udtB"));
    }

    #[test]
    fn bad_values_are_clear_errors() {
        assert_eq!(parse(&["--rate", "100mbps"]).unwrap().forward.rate, Some(100_000_000));
        let e = parse(&["--rate", "100MB"]).unwrap_err().to_string();
        assert!(e.contains("not a rate"), "{e}");
        assert_eq!(parse(&["--loss", "0.5"]).unwrap().forward.loss, Some(0.5));
        assert!(parse(&["--loss", "5"]).unwrap_err().to_string().contains("write 5%"));
        assert!(parse(&["--delay", "50"]).unwrap_err().to_string().contains("missing unit"));
        assert!(parse(&["--loss", "1%", "--ge", "1%,30%"]).is_err());
        assert!(parse(&["--addr-a", "not-an-ip"]).is_err());
        let a = parse(&["--addr-b", "8.8.8.8"]).unwrap();
        assert!(a.config().unwrap_err().to_string().contains("private"));
        let a = parse(&["--ns-a", "x", "--ns-b", "x"]).unwrap();
        assert!(a.config().is_err());
    }
}
