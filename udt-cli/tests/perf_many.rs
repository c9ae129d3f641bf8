//! `udt perf client -P N` against a one-off `udt perf server` over loopback (one I/O thread on
//! its port, or two): every stream connects (the client's connections share one UDP port and
//! I/O thread, and run as tasks on a few threads, not a thread each), and both ends' JSON
//! summaries report all N streams, each with bytes, the same per stream at both ends, with
//! Jain's index over them, and no errors. Checks behaviour, not speed; each child is killed if
//! it outlives its deadline.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const STREAMS: usize = 64;
/// The async client's test: enough connections that a thread each would show.
const ASYNC_STREAMS: usize = 50;
/// Deadline of each child (the test sends for 2 s; connecting and draining take a few more).
const DEADLINE: Duration = Duration::from_secs(90);

/// A child killed on drop (a failed assertion leaves no process behind).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn udt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_udt"));
    c.env_remove("RUST_LOG");
    c
}

/// Wait for `child` to exit within [`DEADLINE`], checking that it succeeded; its standard
/// output (read by `out`) and the most threads it was seen running.
fn finish(mut child: Killed, out: std::thread::JoinHandle<String>, what: &str) -> (String, usize) {
    let start = Instant::now();
    let mut threads = 0;
    let status = loop {
        threads = threads.max(thread_count(child.0.id()));
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < DEADLINE, "{what} did not finish within {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{what}: {status}");
    (out.join().unwrap(), threads)
}

/// The threads of process `pid` now (0 once it is gone).
fn thread_count(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find_map(|l| l.strip_prefix("Threads:"));
    line.and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

fn read_all(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

/// The one JSON line of `stdout`, its summary checked: `streams` streams, each with bytes.
fn check(stdout: &str, role: &str, count: usize) -> serde_json::Value {
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{role}: one JSON object per test: {stdout}");
    let report: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(report["role"], role);
    assert_eq!(report["start"]["streams"].as_u64(), Some(count as u64), "{role}");
    let summary = &report["summary"];
    assert_eq!(summary["errors"].as_array().map(Vec::len), Some(0), "{role}: {summary}");
    let streams = summary["streams"].as_array().unwrap();
    assert_eq!(streams.len(), count, "{role}");
    let mut ids: Vec<u64> = streams.iter().map(|s| s["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=count as u64).collect::<Vec<_>>(), "{role}: stream ids");
    for s in streams {
        assert!(s["bytes"].as_u64().unwrap() > 0, "{role}: a stream moved nothing: {s}");
    }
    let total: u64 = streams.iter().map(|s| s["bytes"].as_u64().unwrap()).sum();
    assert_eq!(summary["bytes"].as_u64(), Some(total), "{role}");
    report
}

#[test]
fn perf_client_with_64_streams_reports_every_stream() {
    run_streams(STREAMS, &[]);
}

/// The same against a server whose port has two I/O threads (`--io-threads 2`): the streams of
/// one client port spread over both, and every one is served.
#[test]
fn a_server_with_two_io_threads_serves_every_stream() {
    run_streams(STREAMS, &["--io-threads", "2"]);
}

/// The async client: 50 connections are tasks on a few threads; every connection's bytes are
/// counted, the same at both ends, and the report's Jain index is the one of the streams'
/// rates (iperf3's -P, with fairness).
#[test]
fn an_async_client_of_50_streams_counts_every_connection_and_their_fairness() {
    let (client, server, client_threads) = run_streams(ASYNC_STREAMS, &[]);
    assert!(client_threads < 16, "the client ran {client_threads} threads for {ASYNC_STREAMS} connections");
    let per_stream = |report: &serde_json::Value| -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = report["summary"]["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["id"].as_u64().unwrap(), s["bytes"].as_u64().unwrap()))
            .collect();
        v.sort_unstable();
        v
    };
    assert_eq!(per_stream(&client), per_stream(&server), "each stream's bytes, client and server");
    for report in [&client, &server] {
        let rates: Vec<f64> = report["summary"]["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["bits_per_second"].as_f64().unwrap())
            .collect();
        let jain = rates.iter().sum::<f64>().powi(2)
            / (rates.len() as f64 * rates.iter().map(|x| x * x).sum::<f64>());
        let fairness = &report["summary"]["fairness"];
        let reported = fairness["jain"].as_f64().unwrap();
        assert!((reported - jain).abs() < 1e-5, "{reported} vs {jain}");
        assert!(reported > 1.0 / ASYNC_STREAMS as f64 && reported <= 1.0, "{fairness}");
        let min = fairness["min_bits_per_second"].as_f64().unwrap();
        let median = fairness["median_bits_per_second"].as_f64().unwrap();
        let max = fairness["max_bits_per_second"].as_f64().unwrap();
        assert!(0.0 < min && min <= median && median <= max, "{fairness}");
    }
}

/// A one-off `udt perf server` (with `server_extra` arguments) and `udt perf client -P
/// streams`, both summaries checked; the client's and the server's reports, and the most
/// threads the client ran.
fn run_streams(streams: usize, server_extra: &[&str]) -> (serde_json::Value, serde_json::Value, usize) {
    let mut server = udt();
    server
        .args(["perf", "server", "--listen", "127.0.0.1:0", "-1", "--json", "--insecure"])
        .args(server_extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut server = Killed(server.spawn().unwrap());
    let server_out = read_all(server.0.stdout.take().unwrap());
    // With --json the address is announced on standard error.
    let (tx, rx) = mpsc::channel();
    let stderr = BufReader::new(server.0.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                let _ = tx.send(rest.split([',', ' ']).next().unwrap().to_string());
            }
        }
    });
    let addr: SocketAddr =
        rx.recv_timeout(Duration::from_secs(10)).expect("no `listening on` line").parse().unwrap();

    let mut client = udt();
    client
        .args([
            "perf",
            "client",
            &addr.to_string(),
            "-P",
            &streams.to_string(),
            "-t",
            "2",
            "--json",
            "--insecure",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut client = Killed(client.spawn().unwrap());
    let client_out = read_all(client.0.stdout.take().unwrap());

    let (client_out, client_threads) = finish(client, client_out, "udt perf client");
    let client_report = check(&client_out, "client", streams);
    let server_report = check(&finish(server, server_out, "udt perf server").0, "server", streams);
    (client_report, server_report, client_threads)
}

/// `-P` takes up to 4096 and refuses more (a usage error, exit status 2).
#[test]
fn parallel_takes_up_to_4096() {
    let done = udt().args(["perf", "--self", "-P", "4097", "-t", "1"]).output().unwrap();
    assert_eq!(done.status.code(), Some(2), "{done:?}");
    let text = String::from_utf8_lossy(&done.stderr);
    assert!(text.contains("4096"), "{text}");
}
