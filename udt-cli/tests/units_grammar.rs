//! The one grammar of quantities across subcommands, seen from the `udt` binary: equivalent
//! spellings give the same results, ambiguous ones are refused, and every refusal is a usage
//! error (exit 2) with the subcommand's usage. Network traffic stays on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Deadline of any one child process.
const DEADLINE: Duration = Duration::from_secs(60);

fn udt(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_udt"));
    c.env_remove("RUST_LOG").env_remove("UDT_CODE").env_remove("UDT_SIM_SEED").args(args);
    c
}

/// Run to the end (killed after `DEADLINE`).
fn run(mut cmd: Command) -> Output {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("{cmd:?} outlived its deadline");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `args` has a value clap's parser refuses: exit 2, saying `why`.
fn assert_bad_value(args: &[&str], why: &str) {
    let out = run(udt(args));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains("invalid value") && err.contains(why), "{args:?}: no {why:?} in {err}");
}

/// `args` is refused after parsing as a usage error of `usage`: exit 2, its usage line,
/// saying `why`.
fn assert_usage_error(args: &[&str], usage: &str, why: &str) {
    let out = run(udt(args));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(&format!("Usage: {usage}")), "{args:?}: no `Usage: {usage}` in {err}");
    assert!(err.contains(why), "{args:?}: no {why:?} in {err}");
}

/// The JSON a short simulator run prints with `extra` parameters, without the lines that
/// measure the host (wall time, deliveries per second of wall time).
fn sim_json(extra: &[&str]) -> String {
    let mut args = vec!["sim", "custom", "--json", "--seed", "7", "--time", "2", "--jobs", "1"];
    args.extend_from_slice(extra);
    let out = run(udt(&args));
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let json = String::from_utf8(out.stdout).unwrap();
    json.lines().filter(|l| !l.contains("\"wall_s\"") && !l.contains("\"deliveries_per_sec\"")).collect()
}

#[test]
fn sim_takes_per_cent_fractions_rates_and_times_alike() {
    let fraction = sim_json(&["--loss", "0.01", "--bw", "100", "--rtt", "100"]);
    assert!(fraction.contains("\"loss\": 0.01,") && fraction.contains("\"bw_mbps\": 100.0"), "{fraction}");
    for spelling in [
        &["--loss", "1%", "--bw", "100", "--rtt", "100"][..],
        &["--loss", "0.01", "--rate", "100mbit", "--rtt", "0.1s"],
        &["--loss", "1%", "--rate", "0.1gbit", "--rtt", "100ms"],
    ] {
        assert_eq!(sim_json(spelling), fraction, "{spelling:?}");
    }
    assert_ne!(sim_json(&["--loss", "2%", "--bw", "100", "--rtt", "100"]), fraction, "the loss is used");
}

#[test]
fn ambiguous_and_malformed_values_are_refused_with_exit_2() {
    assert_bad_value(&["sim", "custom", "--loss", "5"], "write 5%");
    assert_bad_value(&["sim", "custom", "--loss", "100%"], "below 100%");
    assert_bad_value(&["sim", "custom", "--rate", "100MB"], "not a rate");
    assert_bad_value(&["sim", "custom", "--queue", "1MB"], "packets");
    assert_bad_value(&["netem", "--loss", "5"], "ambiguous");
    assert_bad_value(&["netem", "--delay", "50"], "50ms");
    assert_bad_value(&["bench", "--loss", "0.1%,5"], "write 5%");
    assert_bad_value(&["perf", "client", "127.0.0.1:9", "--insecure", "-b", "10MB"], "size");
    assert_bad_value(&["perf", "--self", "-t", "0"], "above 0");
    assert_bad_value(&["recv", "--max-size", "1 parsec"], "unknown size unit");
    for sub in ["send", "cat"] {
        assert_bad_value(&[sub, "--rate", "10MB", "Cargo.toml", "127.0.0.1:9", "--insecure"], "size");
    }
}

#[test]
fn checks_after_parsing_are_usage_errors_with_the_subcommands_usage() {
    assert_usage_error(&["sim", "nosuch"], "udt sim", "udt sim list");
    assert_usage_error(&["sim", "custom", "--count", "3"], "udt sim", "sweep");
    assert_usage_error(&["sim", "sweep", "--loss", "1%"], "udt sim", "does not apply");
    assert_usage_error(&["sim", "custom", "--cc", "nosuch"], "udt sim", "--cc");
    assert_usage_error(&["send", "--code", "hello", "Cargo.toml", "127.0.0.1:9"], "udt send", "too short");
    assert_usage_error(&["cat", "--listen", "127.0.0.1:0", "--code", "hello"], "udt cat", "omit --code");
    assert_usage_error(&["send", "Cargo.toml", "127.0.0.1:9"], "udt send", "--code");
    assert_usage_error(&["perf", "client", "127.0.0.1:9"], "udt perf client", "--code");
    assert_usage_error(&["serve", "--protocol", "rbudp", "Cargo.toml", "--insecure"], "udt serve", "--rate");
}

#[test]
fn perf_takes_times_with_units_and_rates_in_bits() {
    let args = [
        "perf",
        "--self",
        "--insecure",
        "--json",
        "-t",
        "500ms",
        "-i",
        "250ms",
        "--rate",
        "10mbps",
        "--peer-timeout",
        "5s",
    ];
    let out = run(udt(&args));
    assert!(out.status.success(), "{}", stderr(&out));
    let json = String::from_utf8(out.stdout).unwrap();
    assert!(json.contains("\"intervals\""), "{json}");
}

/// Kills the child when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn recv_max_size_1m_is_a_million_bytes() {
    let out = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let mut cmd = udt(&["recv", "--listen", "127.0.0.1:0", "--insecure", "--max-size", "1M", "--out"]);
    cmd.arg(out.path()).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut recv = Killed(cmd.spawn().unwrap());
    let mut lines = BufReader::new(recv.0.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("recv printed no `listening on` line").unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split([',', ' ']).next().unwrap().to_owned();
        }
    };
    // One byte over 10^6 (and under 2^20): refused, so `1M` is not a MiB.
    let file = src.path().join("a.bin");
    std::fs::write(&file, common::data(1_000_001, 1)).unwrap();
    let mut send = udt(&["send", "--insecure"]);
    send.arg(&file).arg(&addr);
    let sent = run(send);
    assert_eq!(sent.status.code(), Some(1), "{}", stderr(&sent));
    assert!(stderr(&sent).contains("too large"), "{}", stderr(&sent));
    assert!(!out.path().join("a.bin").exists());
}
