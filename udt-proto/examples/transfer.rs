//! In-memory transfer demo: two UDT endpoints joined by a simulated link in virtual time.
//!
//! ```text
//! cargo run --release --example transfer -- [--mib 256] [--loss 0.01] [--rtt-ms 10]
//!                                            [--rate-mbps 1000] [--seed 1]
//!                                            [--noisy-link] [--freeze] [--no-periodic-nak]
//! ```
//!
//! Prints the goodput in virtual time (what the protocol achieves on that link), the wall-clock
//! time the core needed to process it, retransmissions and RTT. The data is verified byte for
//! byte.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::ExitCode;
use std::time::Duration;

use support::{stream_transfer, test_data, LinkModel};
use udt_proto::cc::{NativeConfig, NativeFactory};
use udt_proto::connection::Config;

struct Args {
    mib: usize,
    loss: f64,
    rtt_ms: f64,
    rate_mbps: u64,
    seed: u64,
    native: NativeConfig,
    periodic_nak: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        mib: 256,
        loss: 0.001,
        rtt_ms: 10.0,
        rate_mbps: 1000,
        seed: 1,
        native: NativeConfig::default(),
        periodic_nak: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--mib" => a.mib = value()?.parse().map_err(|e| format!("--mib: {e}"))?,
            "--loss" => a.loss = value()?.parse().map_err(|e| format!("--loss: {e}"))?,
            "--rtt-ms" => a.rtt_ms = value()?.parse().map_err(|e| format!("--rtt-ms: {e}"))?,
            "--rate-mbps" => a.rate_mbps = value()?.parse().map_err(|e| format!("--rate-mbps: {e}"))?,
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--noisy-link" => a.native.noisy_link = true,
            "--freeze" => a.native.freeze_on_congestion = true,
            "--no-periodic-nak" => a.periodic_nak = false,
            "-h" | "--help" => {
                return Err("usage: transfer [--mib N] [--loss P] [--rtt-ms MS] [--rate-mbps R] [--seed S] \
                            [--noisy-link] [--freeze] [--no-periodic-nak]"
                    .into())
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if !(0.0..1.0).contains(&a.loss) {
        return Err("--loss must be in [0, 1)".into());
    }
    if a.mib == 0 || a.rate_mbps == 0 || a.rtt_ms.is_nan() || a.rtt_ms < 0.0 {
        return Err("--mib and --rate-mbps must be positive, --rtt-ms not negative".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("transfer: {e}");
            return ExitCode::from(2);
        }
    };
    let len = args.mib * 1024 * 1024;
    let one_way = Duration::from_secs_f64(args.rtt_ms / 2000.0);
    let rate = args.rate_mbps * 1_000_000;
    // Queue of max(BDP, 100) packets, as in the thesis' simulations (max(BDP, 10)).
    let bdp_pkts = (rate as f64 * args.rtt_ms / 1000.0 / 8.0 / 1500.0) as usize;
    let forward = LinkModel {
        rate_bps: Some(rate),
        delay: one_way,
        queue_pkts: bdp_pkts.max(100),
        loss: args.loss,
        ..LinkModel::default()
    };
    let backward = LinkModel { loss: args.loss, ..forward };
    let data = test_data(len, args.seed);
    println!(
        "udt in-memory transfer: {} MiB over {} Mb/s, RTT {} ms, {:.2}% random loss each way (seed {}); \
         native CC noisy-link {} freeze {}",
        args.mib,
        args.rate_mbps,
        args.rtt_ms,
        args.loss * 100.0,
        args.seed,
        args.native.noisy_link,
        args.native.freeze_on_congestion,
    );
    let config = Config {
        cc: std::sync::Arc::new(NativeFactory(args.native)),
        periodic_nak: args.periodic_nak,
        ..Config::default()
    };
    let wall = std::time::Instant::now();
    let (got, report) =
        stream_transfer(args.seed, &data, forward, backward, config, Duration::from_secs(86_400));
    let wall = wall.elapsed();
    if got != data {
        eprintln!("transfer: data mismatch (seed {})", args.seed);
        return ExitCode::FAILURE;
    }
    let secs = report.virtual_time.as_secs_f64();
    let s = &report.sender.total;
    println!("verified:        {} bytes, byte for byte", got.len());
    println!(
        "goodput:         {:.1} Mb/s in {:.3} s of virtual time ({:.1}% of the link)",
        len as f64 * 8.0 / secs / 1e6,
        secs,
        len as f64 * 8.0 / secs / rate as f64 * 100.0
    );
    println!(
        "packets sent:    {} ({} retransmitted, {:.2}%)",
        s.pkts_sent,
        s.retransmits,
        s.retransmits as f64 * 100.0 / s.pkts_sent.max(1) as f64
    );
    println!(
        "link:            {} lost at random, {} dropped by the queue",
        report.link.lost, report.link.queue_drops
    );
    println!(
        "control:         {} ACKs and {} NAKs received by the sender, {} timeouts; receiver detected {} losses",
        s.acks_recv, s.naks_recv, s.timeouts, report.receiver.total.rcv_loss
    );
    println!(
        "RTT:             {:.2} ms (variance {:.2} ms)",
        report.sender.now.rtt_us as f64 / 1e3,
        report.sender.now.rtt_var_us as f64 / 1e3
    );
    println!(
        "wall clock:      {:.2} s to simulate both endpoints and the link ({:.0} packets/s processed)",
        wall.as_secs_f64(),
        (s.pkts_sent + report.receiver.total.pkts_sent) as f64 / wall.as_secs_f64()
    );
    ExitCode::SUCCESS
}
