//! Smoke test of `udt bench --quick --json`, which is also the CI smoke test of `udt netem`:
//! UDT and kernel TCP (CUBIC) each move data through a 50 Mbit/s, 20 ms emulated path and must
//! fill more than half of it in a run where the emulator held its schedule (up to three runs;
//! on a machine too busy to emulate the path, the data must still flow and every run's other
//! checks hold); and a short lossy run whose emulator loses packets both ways. Needs root,
//! /dev/net/tun, `ip` and iperf3; otherwise it prints why it is skipped and passes. The child is
//! killed if it outlives its deadline.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Deadline of the whole benchmark run (it takes about 12 s).
const DEADLINE: Duration = Duration::from_secs(90);

fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

fn skip_reason() -> Option<String> {
    let uid = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
    });
    if uid.as_deref() != Some("0") {
        return Some("not root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    for prog in ["ip", "iperf3"] {
        if !on_path(prog) {
            return Some(format!("{prog} is not installed"));
        }
    }
    if !std::path::Path::new("/usr/bin/time").is_file() {
        return Some("GNU time (/usr/bin/time) is not installed".into());
    }
    None
}

/// Held by each benchmark run: two at once would share the cores and slow each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs `udt bench ARGS --json` within [`DEADLINE`]; its JSON document and its process id.
fn bench(args: &[&str]) -> (serde_json::Value, u32) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut child = Command::new(env!("CARGO_BIN_EXE_udt"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > DEADLINE {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("udt bench {args:?} did not finish in {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "udt bench failed: {status}\n{err}");
    let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("bad JSON ({e}):\n{out}"));
    (doc, child.id())
}

/// Runs of the quick benchmark until one in which the emulator held its schedule.
const ATTEMPTS: usize = 3;

/// The emulator held the path's schedule in a run: 99% of the packets left it at most a quarter
/// of the round trip (5 ms of 20) late, both ways. A machine whose other work stalls the
/// emulator's thread for longer emulates a path of a different rate and delay, on which no
/// system's share of 50 Mbit/s means anything (kernel TCP then falls under half of it too).
fn emulator_held(path: &serde_json::Value) -> bool {
    ["a_to_b", "b_to_a"]
        .iter()
        .all(|d| path["emulator"][d]["release_error"]["p99_us"].as_f64().is_some_and(|p99| p99 <= 5_000.0))
}

#[test]
fn quick_bench_moves_udt_and_tcp_through_the_emulator() {
    if let Some(why) = skip_reason() {
        println!("skipped: {why}");
        return;
    }
    for attempt in 1..=ATTEMPTS {
        let (doc, pid) = bench(&["--quick"]);
        let out = doc.to_string();
        let paths = doc["paths"].as_array().unwrap();
        assert_eq!(paths.len(), 1);
        assert_eq!(paths[0]["path"]["rate_bps"], 50_000_000);
        assert_eq!(paths[0]["path"]["reverse_loss_percent"], 0.0);
        // The emulator forwarded the traffic and cleaned up its namespaces.
        assert!(paths[0]["emulator"]["a_to_b"]["packets_in"].as_u64().unwrap() > 1000);
        let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
        let list = String::from_utf8_lossy(&netns.stdout);
        assert!(!list.contains(&format!("ub{pid}")), "namespaces left behind: {list}");
        let held = emulator_held(&paths[0]);
        let rows = paths[0]["rows"].as_array().unwrap();
        for system in ["udt", "tcp-cubic"] {
            let row = rows
                .iter()
                .find(|r| r["system"] == system)
                .unwrap_or_else(|| panic!("no {system} row:\n{out}"));
            assert_eq!(row["status"], "ok", "{system}: {row}");
            let flow = &row["flow"];
            let bytes = flow["bytes"].as_u64().unwrap();
            // The goodput's share of the rate, the stricter figure (utilization adds the headers).
            let util = flow["goodput_share"].as_f64().unwrap();
            println!(
                "{system}: {bytes} bytes, {:.1} Mb/s, {:.0}% of 50 Mbit/s",
                flow["goodput_mbps"],
                util * 100.0
            );
            assert!(bytes > 0, "{system} delivered nothing");
            assert!(flow["cpu_send_s"].as_f64().is_some() && flow["cpu_recv_s"].as_f64().is_some(), "{row}");
            if held {
                assert!(util > 0.5, "{system} used only {:.0}% of the link:\n{row}", util * 100.0);
            }
        }
        if held {
            return;
        }
        println!(
            "run {attempt}: the emulator fell behind its schedule (release error p99 {} / {} us), \
             so no share of the link is judged: {}",
            paths[0]["emulator"]["a_to_b"]["release_error"]["p99_us"],
            paths[0]["emulator"]["b_to_a"]["release_error"]["p99_us"],
            if attempt < ATTEMPTS {
                "again"
            } else {
                "every run was so; this machine cannot emulate the path now"
            }
        );
    }
}

#[test]
fn loss_applies_to_both_directions_by_default() {
    if let Some(why) = skip_reason() {
        println!("skipped: {why}");
        return;
    }
    let args =
        ["--rate", "50mbit", "--rtt", "20", "--loss", "5%", "--time", "2", "--systems", "udt", "--no-shared"];
    let (doc, _) = bench(&args);
    let path = &doc["paths"][0];
    assert_eq!(path["path"]["loss_percent"], 5.0, "{doc}");
    assert_eq!(path["path"]["reverse_loss_percent"], 5.0, "{doc}");
    // Hundreds of control packets go back at 5% loss: some are lost (P(none) < 1e-8).
    for direction in ["a_to_b", "b_to_a"] {
        let lost = path["emulator"][direction]["lost"].as_u64().unwrap();
        println!("{direction}: {lost} random losses");
        assert!(lost > 0, "no random loss {direction}: {}", path["emulator"]);
    }
}
