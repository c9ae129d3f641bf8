//! `udt perf client -P 64` against a one-off `udt perf server` over loopback (one I/O thread on
//! its port, or two): every stream connects (the client's connections share one UDP port and
//! I/O thread), and both ends' JSON summaries report all 64 streams, each with bytes, and no
//! errors. Checks behaviour, not speed; each child is killed if it outlives its deadline.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const STREAMS: usize = 64;
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

/// Wait for `child` to exit within [`DEADLINE`]; its standard output (read by `out`) and
/// whether it succeeded.
fn finish(mut child: Killed, out: std::thread::JoinHandle<String>, what: &str) -> String {
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < DEADLINE, "{what} did not finish within {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{what}: {status}");
    out.join().unwrap()
}

fn read_all(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

/// The one JSON line of `stdout`, its summary checked: `STREAMS` streams, each with bytes.
fn check(stdout: &str, role: &str) -> serde_json::Value {
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{role}: one JSON object per test: {stdout}");
    let report: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(report["role"], role);
    assert_eq!(report["start"]["streams"].as_u64(), Some(STREAMS as u64), "{role}");
    let summary = &report["summary"];
    assert_eq!(summary["errors"].as_array().map(Vec::len), Some(0), "{role}: {summary}");
    let streams = summary["streams"].as_array().unwrap();
    assert_eq!(streams.len(), STREAMS, "{role}");
    let mut ids: Vec<u64> = streams.iter().map(|s| s["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=STREAMS as u64).collect::<Vec<_>>(), "{role}: stream ids");
    for s in streams {
        assert!(s["bytes"].as_u64().unwrap() > 0, "{role}: a stream moved nothing: {s}");
    }
    let total: u64 = streams.iter().map(|s| s["bytes"].as_u64().unwrap()).sum();
    assert_eq!(summary["bytes"].as_u64(), Some(total), "{role}");
    report
}

#[test]
fn perf_client_with_64_streams_reports_every_stream() {
    run_64_streams(&[]);
}

/// The same against a server whose port has two I/O threads (`--io-threads 2`): the streams of
/// one client port spread over both, and every one is served.
#[test]
fn a_server_with_two_io_threads_serves_every_stream() {
    run_64_streams(&["--io-threads", "2"]);
}

/// A one-off `udt perf server` (with `server_extra` arguments) and `udt perf client -P 64`,
/// both summaries checked.
fn run_64_streams(server_extra: &[&str]) {
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
            &STREAMS.to_string(),
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

    let client_report = check(&finish(client, client_out, "udt perf client"), "client");
    let server_report = check(&finish(server, server_out, "udt perf server"), "server");
    assert_eq!(client_report["summary"]["streams"].as_array().unwrap().len(), STREAMS);
    assert_eq!(server_report["summary"]["streams"].as_array().unwrap().len(), STREAMS);
}

/// `-P` takes up to 4096 and refuses more (a usage error, exit status 2).
#[test]
fn parallel_takes_up_to_4096() {
    let done = udt().args(["perf", "--self", "-P", "4097", "-t", "1"]).output().unwrap();
    assert_eq!(done.status.code(), Some(2), "{done:?}");
    let text = String::from_utf8_lossy(&done.stderr);
    assert!(text.contains("4096"), "{text}");
}
