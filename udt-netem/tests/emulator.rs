//! End-to-end tests of the emulator over real TUN devices and network namespaces. They need
//! root, `/dev/net/tun` and the `ip` command; without them each test prints
//! "skipped: REASON" and passes. Namespace names carry the process id and the test's name, so
//! tests (and concurrent runs) do not collide; every test checks that its namespaces are gone
//! afterwards.

use std::process::Command;
use std::time::{Duration, Instant};

use udt_netem::{ns, probe, Emulator, EmulatorConfig, LinkConfig, Loss, QueueLimit};

const MS: Duration = Duration::from_millis(1);

fn skip_reason() -> Option<String> {
    if !udt_netem::sys::is_root() {
        return Some("not running as root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("the `ip` command (iproute2) is missing".into()),
    }
}

/// Held by each test while its emulator runs: two emulators at once would share the cores, and
/// the precision each test checks is the emulator's, not the machine's under its own load.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

macro_rules! require_privileges {
    () => {
        if let Some(reason) = skip_reason() {
            println!("skipped: {reason}");
            return;
        }
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    };
}

/// Unique namespace names for one test.
fn names(test: &str) -> (String, String) {
    let id = std::process::id();
    (format!("netemt-{test}-{id}-a"), format!("netemt-{test}-{id}-b"))
}

/// Deletes leftover namespaces even when an assertion fails, and checks none remained.
struct NsSweeper(Vec<String>);

impl NsSweeper {
    fn assert_gone(&self) {
        for n in &self.0 {
            assert!(!ns::exists(n), "namespace {n} was left behind");
        }
    }
}

impl Drop for NsSweeper {
    fn drop(&mut self) {
        for n in &self.0 {
            if ns::exists(n) {
                let _ = ns::ip(&["netns", "del", n]);
            }
        }
    }
}

fn config(test: &str, link: LinkConfig) -> (EmulatorConfig, NsSweeper) {
    let (a, b) = names(test);
    let sweeper = NsSweeper(vec![a.clone(), b.clone()]);
    (EmulatorConfig { ns_a: a, ns_b: b, a_to_b: link.clone(), b_to_a: link, ..Default::default() }, sweeper)
}

/// `ping -c 5 -i 0.2` from A to B when ping is installed: (min, avg, max) in ms.
fn ping(ns_a: &str, addr: &str) -> Option<(f64, f64, f64)> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns_a, "ping", "-c", "5", "-i", "0.2", "-q", addr])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("min/avg/max"))?;
    let nums: Vec<f64> =
        line.split('=').nth(1)?.trim().split(['/', ' ']).filter_map(|s| s.parse().ok()).collect();
    Some((*nums.first()?, *nums.get(1)?, *nums.get(2)?))
}

#[test]
fn delay_and_rate_hold_end_to_end() {
    require_privileges!();
    let rate = 50_000_000;
    let link =
        LinkConfig { rate_bps: rate, delay: MS * 20, queue: QueueLimit::Packets(400), ..Default::default() };
    let (cfg, sweeper) = config("rate", link);
    let emu = Emulator::start(cfg).expect("start the emulator");
    let (a, b, addr) = (emu.ns_a().to_owned(), emu.ns_b().to_owned(), emu.addr_b());

    let rtt = probe::udp_rtt(&a, &b, addr, 10, MS * 100, Duration::from_secs(2)).expect("UDP RTT probe");
    println!("UDP echo RTT: {rtt:?}");
    assert_eq!(rtt.received, 10, "every probe answered");
    assert!(rtt.min_ms >= 40.0, "a packet was released early: {rtt:?}");
    assert!(rtt.p50_ms < 45.0, "median RTT too far above 40 ms: {rtt:?}");

    let pinged = ping(&a, &addr.to_string());
    match pinged {
        Some((min, avg, max)) => {
            println!("ping RTT min/avg/max {min}/{avg}/{max} ms");
            assert!(min >= 39.9, "ping RTT {min}/{avg}/{max}");
        }
        None => println!("ping part skipped: ping is not installed (or gave no summary)"),
    }

    let tcp = probe::tcp_transfer(&a, &b, addr, Duration::from_secs(3)).expect("TCP transfer");
    let share = tcp.goodput_bps / rate as f64;
    println!("TCP goodput {:.1} Mb/s = {:.0}% of the rate", tcp.goodput_bps / 1e6, share * 100.0);

    let stats = emu.stop().expect("clean stop");
    println!("A to B:\n{}\nB to A:\n{}", stats.a_to_b, stats.b_to_a);
    assert!(share <= 1.05, "goodput {:.1} Mb/s above the rate", tcp.goodput_bps / 1e6);
    // TCP fills the link, and five pings' mean stays near 40 ms, only where the emulator held
    // its schedule (99% of the packets at most a quarter of the 40 ms round trip late): a
    // machine whose other work stalls the emulator's thread longer emulates a slower, longer
    // path. The medians above hold through such stalls.
    let held = stats.a_to_b.release_error.p99_us <= 10_000.0 && stats.b_to_a.release_error.p99_us <= 10_000.0;
    if held {
        assert!(share >= 0.6, "goodput {:.1} Mb/s", tcp.goodput_bps / 1e6);
        if let Some((min, avg, max)) = pinged {
            assert!(avg < 46.0, "ping RTT {min}/{avg}/{max}");
        }
    } else {
        println!("the emulator fell behind its schedule: TCP's share and ping's mean are not judged");
    }
    assert!(stats.a_to_b.delivered > 10_000);
    assert!(stats.a_to_b.release_error.p50_us < 1000.0);
    assert_eq!(stats.a_to_b.lost, 0);
    sweeper.assert_gone();
}

/// A rate schedule restarted as the transfer starts: 50 Mbit/s for 1.5 s, then 10 Mbit/s. A
/// TCP transfer of 3 s gets about the mean of the two (30 Mbit/s), and the queueing-delay
/// timeline covers the transfer from the restart on.
#[test]
fn a_rate_schedule_runs_from_its_restart() {
    require_privileges!();
    let steps = vec![udt_netem::RateStep { at: MS * 1500, rate_bps: 10_000_000 }];
    let link = LinkConfig {
        rate_bps: 50_000_000,
        delay: MS * 5,
        queue: QueueLimit::Packets(100),
        rate_steps: steps,
        ..Default::default()
    };
    let (cfg, sweeper) = config("steps", link);
    let emu = Emulator::start(cfg).expect("start the emulator");
    let (a, b, addr) = (emu.ns_a().to_owned(), emu.ns_b().to_owned(), emu.addr_b());
    // Long after the emulator's start: only the restart makes the first 1.5 s fast again.
    std::thread::sleep(MS * 1600);
    emu.restart_schedule();
    let restarted = Instant::now();
    let tcp = probe::tcp_transfer(&a, &b, addr, Duration::from_secs(3)).expect("TCP transfer");
    let mbps = tcp.goodput_bps / 1e6;
    println!("TCP goodput {mbps:.1} Mb/s over 50 then 10 Mbit/s");
    assert!(mbps <= 36.0, "goodput {mbps:.1} Mb/s: the slow phase did not come");
    let [forward, _] = emu.queue_delay_timelines();
    let since_restart = restarted.elapsed();
    println!("queueing delay per 100 ms, ms: {forward:?} ({since_restart:?} since the restart)");
    // The timeline starts at the restart: it holds the 3 s transfer and no more buckets than
    // have passed since (an origin at the emulator's start would add 16 idle ones).
    let passed = (since_restart.as_millis() / 100 + 1) as usize;
    assert!((25..=passed).contains(&forward.len()), "{} buckets in {since_restart:?}", forward.len());
    // 100 packets queued at 50 Mbit/s wait 24 ms, at 10 Mbit/s 120 ms: the first 1.5 s are the
    // fast phase again, the rest the slow one.
    let max = |d: &[f64]| d.iter().cloned().fold(0.0, f64::max);
    assert!(max(&forward[..15]) < 30.0, "the schedule restarted fast: {forward:?}");
    assert!(max(&forward[16..]) > 30.0, "the slow phase queues longer: {forward:?}");
    let stats = emu.stop().expect("clean stop");
    // The fast phase's share of the goodput, where the emulator held its schedule (99% of the
    // packets at most a quarter of the 10 ms round trip late).
    if stats.a_to_b.release_error.p99_us <= 2_500.0 && stats.b_to_a.release_error.p99_us <= 2_500.0 {
        assert!(mbps >= 18.0, "goodput {mbps:.1} Mb/s: the fast phase did not come back");
    } else {
        println!(
            "the emulator fell behind its schedule: the goodput's lower bound is not judged ({} / {} us)",
            stats.a_to_b.release_error.p99_us, stats.b_to_a.release_error.p99_us
        );
    }
    sweeper.assert_gone();
}

#[test]
fn counters_account_for_every_packet() {
    require_privileges!();
    let link = LinkConfig {
        delay: MS * 2,
        jitter: MS,
        loss: Loss::Bernoulli { p: 0.1 },
        reorder: 0.05,
        duplicate: 0.05,
        corrupt: 0.02,
        ..Default::default()
    };
    let (cfg, sweeper) = config("count", link);
    let emu = Emulator::start(cfg).expect("start the emulator");
    let (a, b, addr) = (emu.ns_a().to_owned(), emu.ns_b().to_owned(), emu.addr_b());
    let rtt = probe::udp_rtt(&a, &b, addr, 300, MS * 3, MS * 50).expect("UDP RTT probe");
    println!("{rtt:?}");
    // Each probe survives both directions' 10% loss with probability 0.81 (duplicates help a
    // little, corruption hurts a little): expect about 243 of 300.
    assert!((180..=285).contains(&rtt.received), "{rtt:?}");
    std::thread::sleep(MS * 100); // let every held packet go out
    let s = emu.stop().expect("clean stop");
    for (dir, d) in [("A to B", &s.a_to_b), ("B to A", &s.b_to_a)] {
        println!("{dir}:\n{d}");
        let fates = d.delivered + d.lost + d.queue_drops + d.buffer_drops + d.write_errors;
        assert_eq!(d.packets_in + d.duplicated, fates, "{dir}: every copy has exactly one fate");
        assert!(d.lost > 0 && d.duplicated > 0 && d.reordered > 0, "{dir}: {d:?}");
    }
    sweeper.assert_gone();
}

#[test]
fn failed_setup_cleans_up_and_keeps_existing_namespaces() {
    require_privileges!();
    let (cfg, sweeper) = config("setup", LinkConfig::default());
    // Namespace B exists already and holds a device with the name the emulator wants.
    ns::ip(&["netns", "add", &cfg.ns_b]).expect("create namespace B");
    ns::ip(&["-n", &cfg.ns_b, "link", "add", &cfg.dev_b, "type", "veth", "peer", "name", "netemtpeer"])
        .expect("create a clashing device");
    let err = Emulator::start(cfg.clone()).expect_err("the device name clashes");
    println!("expected error: {err:#}");
    assert!(format!("{err:#}").contains(&cfg.dev_b));
    assert!(!ns::exists(&cfg.ns_a), "the namespace the emulator created is removed");
    assert!(ns::exists(&cfg.ns_b), "the namespace that existed before is kept");
    ns::ip(&["netns", "del", &cfg.ns_b]).expect("delete namespace B");
    sweeper.assert_gone();
}
