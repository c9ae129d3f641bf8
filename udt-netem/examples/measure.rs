//! Measures the emulator on this machine: starts it with the `udt netem` options given, then
//! runs a UDP echo RTT probe, and optionally an in-process TCP transfer and iperf3 (TCP, or UDP
//! at a given rate) between the namespaces, and prints everything with the emulator's counters.
//!
//! `sudo cargo run --release -p udt-netem --example measure -- --rate 1gbit --delay 50ms \
//!     --queue 4200p --iperf-tcp 10 --iperf-udp 900mbit`

use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Parser;
use udt_netem::{probe, Emulator, EmulatorHandle};

/// Measure the emulator: RTT probe, TCP transfer, iperf3.
#[derive(Parser, Debug)]
#[command(name = "measure")]
struct Cli {
    #[command(flatten)]
    netem: udt_netem::cli::Args,
    /// UDP echo probes to send (one every 100 ms).
    #[arg(long, default_value_t = 20)]
    rtt_count: usize,
    /// Seconds of in-process TCP transfer A to B (0: none).
    #[arg(long, default_value_t = 0.0)]
    tcp: f64,
    /// Seconds of iperf3 TCP, A to B (0: none).
    #[arg(long, default_value_t = 0.0)]
    iperf_tcp: f64,
    /// Rate of an iperf3 UDP test A to B, e.g. 900mbit (none by default).
    #[arg(long, value_parser = udt_netem::units::parse_rate)]
    iperf_udp: Option<u64>,
    /// Seconds of the iperf3 UDP test.
    #[arg(long, default_value_t = 5.0)]
    udp_time: f64,
    /// Probe the RTT again while the iperf3 TCP test runs (queueing delay included).
    #[arg(long)]
    rtt_under_load: bool,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let emu = Emulator::start(cli.netem.config()?)?;
    let (a, b, addr) = (emu.ns_a().to_owned(), emu.ns_b().to_owned(), emu.addr_b());
    println!("A to B: {}", emu.config().a_to_b);
    let rtt =
        probe::udp_rtt(&a, &b, addr, cli.rtt_count, Duration::from_millis(100), Duration::from_secs(2))?;
    println!(
        "idle RTT ({}/{}): min {:.3} ms, mean {:.3} ms, p50 {:.3} ms, max {:.3} ms",
        rtt.received, rtt.sent, rtt.min_ms, rtt.mean_ms, rtt.p50_ms, rtt.max_ms
    );
    print_errors("after RTT probe", &emu);
    if cli.tcp > 0.0 {
        let t = probe::tcp_transfer(&a, &b, addr, Duration::from_secs_f64(cli.tcp))?;
        println!("in-process TCP: {:.1} Mb/s ({} bytes in {:.2} s)", t.goodput_bps / 1e6, t.bytes, t.seconds);
    }
    if cli.iperf_tcp > 0.0 {
        let loaded = cli.rtt_under_load.then(|| {
            let (a, b) = (a.clone(), b.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(2));
                probe::udp_rtt(&a, &b, addr, 20, Duration::from_millis(100), Duration::from_secs(2))
            })
        });
        let json = iperf(&emu, &["-t", &cli.iperf_tcp.to_string()])?;
        let bps = json["end"]["sum_received"]["bits_per_second"].as_f64().unwrap_or(0.0);
        let retr = json["end"]["sum_sent"]["retransmits"].as_u64().unwrap_or(0);
        println!("iperf3 TCP: {:.1} Mb/s received, {retr} retransmits", bps / 1e6);
        if let Some(Ok(Ok(r))) = loaded.map(|h| h.join()) {
            println!(
                "RTT under TCP load: min {:.3} ms, mean {:.3} ms, max {:.3} ms",
                r.min_ms, r.mean_ms, r.max_ms
            );
        }
    }
    if let Some(rate) = cli.iperf_udp {
        let args = ["-u", "-b", &rate.to_string(), "-l", "1400", "-t", &cli.udp_time.to_string()];
        let json = iperf(&emu, &args)?;
        let sum = &json["end"]["sum"];
        let bps = sum["bits_per_second"].as_f64().unwrap_or(0.0);
        let lost = sum["lost_percent"].as_f64().unwrap_or(0.0);
        let sent = &json["end"]["sum_sent"];
        let sent_bps = sent["bits_per_second"].as_f64().unwrap_or(bps);
        println!(
            "iperf3 UDP at {} Mb/s: sent {:.1} Mb/s, received {:.1} Mb/s, lost {lost:.2}%",
            rate / 1_000_000,
            sent_bps / 1e6,
            bps * (1.0 - lost / 100.0) / 1e6
        );
    }
    let stats = emu.stop()?;
    println!("A to B:\n{}\nB to A:\n{}", stats.a_to_b, stats.b_to_a);
    Ok(())
}

fn print_errors(what: &str, emu: &EmulatorHandle) {
    let s = emu.stats();
    let e = s.a_to_b.release_error;
    println!(
        "release error {what}: mean {:.1} us, p50 {:.1} us, p99 {:.1} us, max {:.1} us",
        e.mean_us, e.p50_us, e.p99_us, e.max_us
    );
}

/// Runs `iperf3 -s -1` in B and `iperf3 -c ADDR_B -J ARGS` in A; returns the client's JSON.
fn iperf(emu: &EmulatorHandle, args: &[&str]) -> anyhow::Result<serde_json::Value> {
    let addr = emu.addr_b().to_string();
    let mut server = Command::new("ip")
        .args(["netns", "exec", emu.ns_b(), "iperf3", "-s", "-1", "-B", &addr])
        .stdout(Stdio::null())
        .spawn()
        .context("cannot start iperf3")?;
    std::thread::sleep(Duration::from_millis(300));
    let out = Command::new("ip")
        .args(["netns", "exec", emu.ns_a(), "iperf3", "-c", &addr, "-J"])
        .args(args)
        .output();
    let _ = server.kill();
    let _ = server.wait();
    let out = out.context("cannot run iperf3")?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).context("iperf3 gave no JSON")?;
    if let Some(e) = json["error"].as_str() {
        bail!("iperf3: {e}");
    }
    Ok(json)
}
