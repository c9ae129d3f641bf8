//! `udt bench`: the head-to-head WAN benchmark. For each path of a matrix (rate x RTT x random
//! loss, the loss in both directions unless `--reverse-loss` says otherwise) it starts one
//! `udt-netem` emulator and runs the same memory-to-memory transfer for each system in turn
//! (our UDT with any congestion control, the reference UDT4, kernel TCP CUBIC and BBR through
//! iperf3, raw UDP as a ceiling; optionally our file-to-file transfer), servers in namespace B
//! and clients in A, every process under GNU time; then shared runs (two UDT flows; UDT with
//! TCP CUBIC) on each rate's 100 ms, loss-free path.
//!
//! Layout, one concept per file: [`args`] (the command line), [`plan`] (the matrix it makes),
//! [`system`] (what `--systems` names), [`path`] (a path and its emulator configuration),
//! [`child`] (a timed, killable process in a namespace),
//! [`interrupt`] (Ctrl-C), [`flow`] (one flow: start, finish, measure), [`udt_perf`],
//! [`udt4`], [`iperf`], [`files`] (each system's commands and output parsing), [`shared`]
//! (flows at once, Jain's index), [`report`] (tables, JSON), [`plot`] (SVG).
//!
//! Invariants: traffic flows only between the emulator's namespaces; every child process has
//! a deadline and is killed on overrun, error or Ctrl-C; the emulator (namespaces, devices) is
//! stopped on every path out, by its guard when not explicitly.

mod args;
mod child;
mod files;
mod flow;
mod interrupt;
mod iperf;
mod path;
mod plan;
mod plot;
mod report;
mod seed;
mod shared;
mod steps;
mod system;
mod udt4;
mod udt_perf;

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use udt_netem::Emulator;

pub use args::Args;
use flow::{Ctx, Flow};
use plan::Plan;
use report::{PathReport, Report, Row};
use system::System;

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
        System::SeedRef(_) if ctx.seed_peers.is_none() => Some(seed::MISSING.into()),
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
    let seed_peers = seed::locate(&exe);
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
            addr_a: emu.addr_a(),
            time: plan.time,
            udt_exe: exe.clone(),
            udt4: udt4.clone(),
            seed_peers: seed_peers.clone(),
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
                    None if spec.rate_steps.is_empty() => flow::run_alone(&ctx, system),
                    None => {
                        emu.restart_schedule();
                        flow::run_alone(&ctx, system).map(|f| {
                            let [queue, _] = emu.queue_delay_timelines();
                            steps::annotate(f, &spec.rate_steps, spec.rate_bps, spec.rtt_ms, queue)
                        })
                    }
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
            // Each of our controllers the run names (the default when it names none): two of
            // its flows, and one beside kernel CUBIC; for reference CUBIC beside itself and
            // kernel BBR beside CUBIC, so CUBIC's share beside ours reads against its share
            // beside its own kind.
            let mut ours: Vec<System> =
                plan.systems.iter().filter(|s| matches!(s, System::Udt { .. })).cloned().collect();
            if ours.is_empty() {
                ours.push(System::Udt { cc: None });
            }
            let cubic = System::Tcp { cc: "cubic".into() };
            let mut pairs: Vec<Vec<System>> = ours.iter().map(|udt| vec![udt.clone(), udt.clone()]).collect();
            if on_path("iperf3") {
                pairs.extend(ours.iter().map(|udt| vec![udt.clone(), cubic.clone()]));
                pairs.push(vec![cubic.clone(), cubic.clone()]);
                pairs.push(vec![System::Tcp { cc: "bbr".into() }, cubic]);
            }
            for pair in pairs {
                emu.restart_schedule();
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
        if stats.a_to_b.fell_behind() || stats.b_to_a.fell_behind() {
            eprintln!(
                "    warning: the emulator fell behind its schedule on this path (A to B / B to A: \
                 p99 release error {:.1} / {:.1} ms, kernel drops {} / {}): other work on the \
                 machine held packets up, so every system here met longer and more variable delays \
                 than configured, which a delay-based controller reads as a queue",
                stats.a_to_b.release_error.p99_us / 1000.0,
                stats.b_to_a.release_error.p99_us / 1000.0,
                stats.a_to_b.tun_drops.unwrap_or(0),
                stats.b_to_a.tun_drops.unwrap_or(0)
            );
        }
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
