//! `udt bench`: the head-to-head WAN benchmark. For each path of a matrix (RTT x random loss
//! at one rate) it starts one `udt-netem` emulator and runs the same memory-to-memory transfer
//! for each system in turn (our UDT with any congestion control, the reference UDT4, kernel
//! TCP CUBIC and BBR through iperf3, raw UDP as a ceiling; optionally our file-to-file
//! transfer), servers in namespace B and clients in A, every process under GNU time; then
//! shared runs (two UDT flows; UDT with TCP CUBIC) on the 100 ms, loss-free path.
//!
//! Layout, one concept per file: [`system`] (what `--systems` names), [`path`] (a path and
//! its emulator configuration), [`child`] (a timed, killable process in a namespace),
//! [`interrupt`] (Ctrl-C), [`flow`] (one flow: start, finish, measure), [`udt_perf`],
//! [`udt4`], [`iperf`], [`files`] (each system's commands and output parsing), [`shared`]
//! (flows at once, Jain's index), [`report`] (tables, JSON), [`plot`] (SVG).
//!
//! Invariants: traffic flows only between the emulator's namespaces; every child process has
//! a deadline and is killed on overrun, error or Ctrl-C; the emulator (namespaces, devices) is
//! stopped on every path out, by its guard when not explicitly.

mod child;
mod files;
mod flow;
mod interrupt;
mod iperf;
mod path;
mod plot;
mod report;
mod shared;
mod system;
mod udt4;
mod udt_perf;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use udt_netem::Emulator;

use flow::{Ctx, Flow};
use path::PathSpec;
use report::{PathReport, Report, Row};
use system::System;

/// Arguments of `udt bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Bottleneck rate of the emulated link (both directions): 100mbit, 50mbit, 1gbit.
    #[arg(long, value_name = "RATE", default_value = "100mbit", value_parser = parse_rate)]
    pub rate: u64,
    /// Round-trip times to test, ms (comma-separated); half each way.
    #[arg(long, value_name = "MS,...", default_value = "10,100,300", value_delimiter = ',', value_parser = parse_rtt)]
    pub rtt: Vec<f64>,
    /// Random loss rates A to B (the data direction) to test, percent (comma-separated).
    #[arg(long, value_name = "PERCENT,...", default_value = "0,0.1,1", value_delimiter = ',', value_parser = parse_loss)]
    pub loss: Vec<f64>,
    /// Seconds each transfer sends for.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_time)]
    pub time: f64,
    /// Runs per system and path, interleaved round by round; each cell reports the run with the
    /// median goodput (the lower middle one for an even count) and lists every run's goodput.
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// Systems to run (comma-separated): udt, udt:CC (`udt cc list`), udt-file (file to file),
    /// udt4, tcp-cubic, tcp-bbr, tcp-reno, udp [default: udt,udt:cubic,udt4,tcp-cubic,tcp-bbr,udp].
    #[arg(long, value_name = "NAME,...", value_delimiter = ',', value_parser = System::parse)]
    pub systems: Vec<System>,
    /// Also run our UDT file to file (`udt send`/`udt recv`, BLAKE3 verified) on each path.
    #[arg(long)]
    pub files: bool,
    /// Skip the shared runs (two UDT flows; UDT with TCP CUBIC).
    #[arg(long)]
    pub no_shared: bool,
    /// Shared runs on every path, not only the 100 ms loss-free one.
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
    /// CI mode: one path (50 Mbit/s, RTT 20 ms, no loss), 3 s, udt and tcp-cubic, no shared
    /// runs. Overrides --rate, --rtt, --loss, --time, --systems.
    #[arg(long)]
    pub quick: bool,
}

fn parse_rate(s: &str) -> Result<u64, String> {
    match udt_netem::units::parse_rate(s) {
        Ok(0) => Err("the benchmark needs a rate limit (0 means unlimited)".into()),
        Ok(r) => Ok(r),
        Err(e) => Err(e.to_string()),
    }
}

/// Milliseconds: a bare number, or a duration with a unit (`100ms`, `0.3s`).
fn parse_rtt(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let ms = match s.parse::<f64>() {
        Ok(ms) => ms,
        Err(_) => udt_netem::units::parse_duration(s).map_err(|e| e.to_string())?.as_secs_f64() * 1000.0,
    };
    if !(0.0..=10_000.0).contains(&ms) {
        return Err(format!("RTT {s} is not between 0 and 10000 ms"));
    }
    Ok(ms)
}

/// Percent: `0.1` or `0.1%`.
fn parse_loss(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let p: f64 = s.trim_end_matches('%').parse().map_err(|_| format!("`{s}` is not a loss percentage"))?;
    if !(0.0..=100.0).contains(&p) {
        return Err(format!("loss {s}% is not between 0 and 100"));
    }
    Ok(p)
}

fn parse_time(s: &str) -> Result<f64, String> {
    let t: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(t > 0.0 && t <= 3600.0) {
        return Err(format!("`{s}` is not between 0 and 3600 seconds"));
    }
    Ok(t)
}

/// What one invocation runs, after `--quick` and `--files` are applied.
struct Plan {
    paths: Vec<PathSpec>,
    systems: Vec<System>,
    time: Duration,
    /// Indexes into `paths` that get shared runs.
    shared_on: Vec<usize>,
}

impl Plan {
    fn new(args: &Args) -> Plan {
        let (rate, rtts, losses, time, mut systems) = if args.quick {
            let systems = vec![System::Udt { cc: None }, System::Tcp { cc: "cubic".into() }];
            (50_000_000, vec![20.0], vec![0.0], 3.0, systems)
        } else {
            let systems = if args.systems.is_empty() { System::defaults() } else { args.systems.clone() };
            (args.rate, args.rtt.clone(), args.loss.clone(), args.time, systems)
        };
        systems.dedup();
        if args.files && !systems.contains(&System::UdtFile) {
            systems.push(System::UdtFile);
        }
        let paths: Vec<PathSpec> = rtts
            .iter()
            .flat_map(|&rtt| losses.iter().map(move |&loss| PathSpec::new(rate, rtt, loss)))
            .collect();
        let shared_on = if args.quick || args.no_shared || paths.is_empty() {
            Vec::new()
        } else if args.shared_all {
            (0..paths.len()).collect()
        } else {
            // The 100 ms loss-free path, else the least lossy path with the RTT nearest 100 ms.
            let score = |p: &PathSpec| (p.loss_percent, (p.rtt_ms - 100.0).abs());
            let best = (0..paths.len()).min_by(|&a, &b| {
                score(&paths[a]).partial_cmp(&score(&paths[b])).unwrap_or(std::cmp::Ordering::Equal)
            });
            best.into_iter().collect()
        };
        Plan { paths, systems, time: Duration::from_secs_f64(time), shared_on }
    }
}

/// Whether `prog` is an executable file on `$PATH`.
fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(prog).is_file()))
}

/// Root, the TUN driver, `ip` and GNU time: without them nothing can run.
fn check_prerequisites() -> Result<()> {
    if !udt_netem::sys::is_root() {
        bail!("udt bench needs root (it creates network namespaces and TUN devices): run it with sudo");
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        bail!("/dev/net/tun is missing: load the tun module (modprobe tun) or run where TUN is available");
    }
    if !on_path("ip") {
        bail!("`ip` (iproute2) is not installed");
    }
    if !std::path::Path::new(child::GNU_TIME).is_file() {
        bail!(
            "{} (GNU time, which measures each process's CPU) is missing: apt-get install time",
            child::GNU_TIME
        );
    }
    Ok(())
}

/// Why `system` cannot run here, if it cannot.
fn missing(system: &System, ctx: &Ctx) -> Option<String> {
    if let Some(why) = system.unsupported() {
        return Some(why);
    }
    match system {
        System::Tcp { .. } | System::Udp if !on_path("iperf3") => Some("iperf3 not installed".into()),
        System::Udt4 if !ctx.udt4.as_ref().is_some_and(|p| p.is_file()) => Some(udt4::MISSING.into()),
        _ => None,
    }
}

/// The scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn create() -> Result<Scratch> {
        let dir = std::env::temp_dir().join(format!("udt-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run `udt bench`.
pub fn run(args: &Args) -> Result<()> {
    check_prerequisites()?;
    interrupt::install()?;
    let plan = Plan::new(args);
    let exe = std::env::current_exe().context("cannot find the udt executable")?;
    let udt4 = udt4::locate(args.udt4.as_deref(), &exe);
    let scratch = Scratch::create()?;
    let prefix = format!("ub{}", std::process::id());
    let mut report = Report {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        time_s: plan.time.as_secs_f64(),
        paths: Vec::new(),
        shared: Vec::new(),
    };
    let n = plan.paths.len();
    for (i, spec) in plan.paths.iter().enumerate() {
        eprintln!("[{}/{n}] {}", i + 1, spec.label());
        let emu = Emulator::start(spec.emulator_config(&prefix))
            .with_context(|| format!("cannot start the emulator for {}", spec.label()))?;
        let ctx = Ctx {
            path: spec.clone(),
            ns_a: emu.ns_a().to_string(),
            ns_b: emu.ns_b().to_string(),
            addr_b: emu.addr_b(),
            time: plan.time,
            udt_exe: exe.clone(),
            udt4: udt4.clone(),
            dir: scratch.0.clone(),
        };
        let mut runs: Vec<Vec<Result<Flow>>> = plan.systems.iter().map(|_| Vec::new()).collect();
        for round in 0..args.repeat {
            if args.repeat > 1 {
                eprintln!("  round {}/{}", round + 1, args.repeat);
            }
            for (system, done) in plan.systems.iter().zip(runs.iter_mut()) {
                let result = match missing(system, &ctx) {
                    Some(why) => Err(anyhow::anyhow!("skipped: {why}")),
                    None => flow::run_alone(&ctx, system),
                };
                interrupt::check()?;
                emu.check().context("the emulator failed")?;
                if let Ok(f) = &result {
                    if args.repeat > 1 {
                        eprintln!("    {system}: {:.1} Mb/s", f.goodput_mbps);
                    }
                }
                done.push(result);
            }
        }
        let mut rows = Vec::new();
        for (system, done) in plan.systems.iter().zip(runs) {
            let row = Row::from_runs(system.to_string(), done);
            match (&row.flow, &row.error) {
                (Some(f), _) => {
                    eprintln!(
                        "    {system}: {:.1} Mb/s ({:.1}% of the rate, {:.1}% utilization)",
                        f.goodput_mbps,
                        f.goodput_share * 100.0,
                        f.utilization * 100.0
                    )
                }
                (None, e) => eprintln!("    {system}: {:?}: {}", row.status, e.as_deref().unwrap_or("")),
            }
            rows.push(row);
        }
        if plan.shared_on.contains(&i) {
            let udt = System::Udt { cc: None };
            let mut pairs = vec![vec![udt.clone(), udt.clone()]];
            if on_path("iperf3") {
                pairs.push(vec![udt, System::Tcp { cc: "cubic".into() }]);
            }
            for pair in pairs {
                let run = shared::run(&ctx, &pair);
                interrupt::check()?;
                let shares: Vec<String> = run
                    .flows
                    .iter()
                    .map(|f| format!("{} {:.1} Mb/s", f.system, f.flow.goodput_mbps))
                    .collect();
                eprintln!(
                    "    shared {}: {}{}",
                    run.name,
                    shares.join(", "),
                    run.error.as_deref().unwrap_or("")
                );
                report.shared.push(run);
            }
        }
        let stats = emu.stop().context("stopping the emulator")?;
        report.paths.push(PathReport { path: spec.clone(), rows, emulator: Some(stats) });
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).context("encoding JSON")?);
    } else {
        println!("udt bench: `{}`\n{}", report.command, report::text(&report));
    }
    if let Some(dir) = &args.plot {
        let files = plot::write_all(&report, dir)?;
        eprintln!("wrote {} plots into {}", files.len(), dir.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn defaults_make_the_full_matrix_with_shared_runs_on_100ms() {
        let cli = Cli::try_parse_from(["bench"]).unwrap();
        let plan = Plan::new(&cli.args);
        assert_eq!(plan.paths.len(), 9);
        assert_eq!(plan.systems.len(), 6);
        assert_eq!(plan.shared_on.len(), 1);
        let p = &plan.paths[plan.shared_on[0]];
        assert_eq!((p.rtt_ms, p.loss_percent), (100.0, 0.0));
        assert_eq!(p.rate_bps, 100_000_000);
    }

    #[test]
    fn quick_and_options() {
        let cli = Cli::try_parse_from(["bench", "--quick", "--rate", "1gbit"]).unwrap();
        let plan = Plan::new(&cli.args);
        assert_eq!(plan.paths.len(), 1);
        assert_eq!(plan.paths[0].rate_bps, 50_000_000);
        assert!(plan.shared_on.is_empty());
        let cli = Cli::try_parse_from(["bench", "--rtt", "50ms,0.2s", "--loss", "0.5%", "--files"]).unwrap();
        let plan = Plan::new(&cli.args);
        assert_eq!(plan.paths.iter().map(|p| p.rtt_ms).collect::<Vec<_>>(), vec![50.0, 200.0]);
        assert_eq!(plan.paths[0].loss_percent, 0.5);
        assert!(plan.systems.contains(&System::UdtFile));
        assert!(Cli::try_parse_from(["bench", "--rate", "0"]).is_err());
        assert!(Cli::try_parse_from(["bench", "--systems", "sctp"]).is_err());
        assert!(Cli::try_parse_from(["bench", "--loss", "101"]).is_err());
        assert!(Cli::try_parse_from(["bench", "--no-shared", "--shared-all"]).is_err());
        assert_eq!(Cli::try_parse_from(["bench"]).unwrap().args.repeat, 1);
        assert_eq!(Cli::try_parse_from(["bench", "--repeat", "3"]).unwrap().args.repeat, 3);
        assert!(Cli::try_parse_from(["bench", "--repeat", "0"]).is_err());
        assert!(Cli::try_parse_from(["bench", "--repeat", "21"]).is_err());
    }
}
