//! Memory of idle connections: a listener that has accepted 1,000 connections which send
//! nothing stays under 100 MB resident (buffers are committed as data needs them, never up
//! front). The listener runs in a child process (this test binary, re-run with an environment
//! variable) so that its resident size is its own; loopback only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use udt::{Options, UdtListener};

/// Set in the child: run as the listener.
const SERVER_ENV: &str = "UDT_IDLE_MEMORY_SERVER";
const CONNECTIONS: usize = 1000;
/// Prefix of the child's answers on its standard output.
const MARK: &str = "udt-idle-memory: ";
const BUDGET_BYTES: u64 = 100 << 20;

fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

fn options() -> Options {
    Options {
        read_timeout: Some(Duration::from_secs(60)),
        write_timeout: Some(Duration::from_secs(60)),
        ..Options::default()
    }
}

/// The child: print the port, accept `CONNECTIONS`, read one byte from each (so every
/// connection has carried data once), print the resident size, then wait for stdin to close.
fn serve() {
    let mut listener = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    listener.set_accept_timeout(Some(Duration::from_secs(60)));
    println!("{MARK}{}", listener.local_addr().unwrap().port());
    let before = resident_bytes();
    let mut streams = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let (mut s, _) = listener.accept().unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        streams.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    println!("{MARK}{} {}", before, resident_bytes());
    let mut rest = String::new();
    let _ = std::io::stdin().read_to_string(&mut rest);
    drop(streams);
}

#[test]
fn a_thousand_idle_connections_stay_under_100_mb() {
    if std::env::var_os(SERVER_ENV).is_some() {
        serve();
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_thousand_idle_connections_stay_under_100_mb", "--nocapture", "--test-threads=1"])
        .env(SERVER_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    // The test harness prints its own words around ours: take what follows the mark.
    let number_line = |out: &mut BufReader<_>| -> String {
        loop {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "the listener exited early");
            if let Some((_, rest)) = line.split_once(MARK) {
                return rest.trim().to_string();
            }
        }
    };
    let port: u16 = number_line(&mut out).parse().unwrap();
    // All clients on one multiplexer: one thread, one port.
    let clients = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    let mut streams = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let mut s = clients.connect(("127.0.0.1", port)).unwrap();
        s.write_all(b"x").unwrap();
        streams.push(s);
    }
    let sizes = number_line(&mut out);
    drop(child.stdin.take());
    let (before, after) = sizes.split_once(' ').unwrap();
    let (before, after): (u64, u64) = (before.parse().unwrap(), after.parse().unwrap());
    child.wait().unwrap();
    eprintln!(
        "listener resident: {:.1} MB before, {:.1} MB with {CONNECTIONS} idle connections ({:.1} kB each)",
        before as f64 / 1e6,
        after as f64 / 1e6,
        (after.saturating_sub(before)) as f64 / CONNECTIONS as f64 / 1e3
    );
    assert!(after < BUDGET_BYTES, "{after} bytes resident with {CONNECTIONS} idle connections");
}
