//! A peer killed with SIGKILL (no shutdown sent) is detected within `peer_idle_timeout`: an
//! idle reader's `read` and a busy writer's `write` fail with `ConnectionReset` about 5 s after
//! the peer went silent, instead of UDT4's 46 s. The peer is this test binary re-run as a child
//! process; loopback only. Bounds are generous (under 20 s); the times are printed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use udt::{Options, UdtListener, UdtStream};

const TIMEOUT: Duration = Duration::from_secs(5);
/// Generous bound on detection (behaviour, not speed: a loaded machine may be slow).
const BOUND: Duration = Duration::from_secs(20);
/// Set in the child: what to do.
const ROLE_ENV: &str = "UDT_DEAD_PEER_ROLE";
const MARK: &str = "udt-dead-peer: ";

fn options() -> Options {
    let mut o = Options {
        read_timeout: Some(Duration::from_secs(60)),
        write_timeout: Some(Duration::from_secs(60)),
        ..Options::default()
    };
    o.set_peer_idle_timeout(Some(TIMEOUT));
    o
}

fn spawn(role: &str) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_peer", "--ignored", "--nocapture", "--test-threads=1"])
        .env(ROLE_ENV, role)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

fn answer(out: &mut BufReader<std::process::ChildStdout>) -> String {
    loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "the child exited early");
        if let Some((_, rest)) = line.split_once(MARK) {
            return rest.trim().to_string();
        }
    }
}

/// Run in a child process: `connect:ADDR` connects, writes a little and idles; `listen`
/// prints its port, accepts one connection and reads it forever.
#[test]
#[ignore = "helper process for the dead-peer tests"]
fn child_peer() {
    let Ok(role) = std::env::var(ROLE_ENV) else { return };
    if let Some(addr) = role.strip_prefix("connect:") {
        let mut c = UdtStream::connect_with(addr, options()).unwrap();
        c.write_all(b"hello").unwrap();
        println!("{MARK}connected");
        thread::sleep(Duration::from_secs(120));
    } else {
        let listener = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
        println!("{MARK}{}", listener.local_addr().unwrap().port());
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        while s.read(&mut buf).is_ok_and(|n| n > 0) {}
    }
}

fn kill(mut child: Child) -> Instant {
    child.kill().unwrap();
    child.wait().unwrap();
    Instant::now()
}

#[test]
fn an_idle_reader_learns_of_a_killed_peer_within_the_timeout() {
    let listener = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    let addr = listener.local_addr().unwrap();
    let (child, mut out) = spawn(&format!("connect:{addr}"));
    let (mut s, _) = listener.accept().unwrap();
    let mut hello = [0u8; 5];
    s.read_exact(&mut hello).unwrap();
    assert_eq!(answer(&mut out), "connected");
    // Idle for longer than the timeout first: the live peer's keep-alives keep it up.
    s.set_read_timeout(Some(TIMEOUT + Duration::from_secs(2)));
    let e = s.read(&mut hello).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "an idle live peer: {e}");
    s.set_read_timeout(Some(Duration::from_secs(60)));
    let killed = kill(child);
    let e = s.read(&mut hello).unwrap_err();
    let after = killed.elapsed();
    eprintln!("idle reader: peer lost {after:?} after the kill ({e})");
    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
    assert!(after < BOUND, "detected only after {after:?}");
    assert!(
        after > TIMEOUT / 2,
        "declared lost after {after:?}, before the peer could have been silent that long"
    );
}

#[test]
fn a_busy_writer_learns_of_a_killed_peer_within_the_timeout() {
    let (child, mut out) = spawn("listen");
    let port: u16 = answer(&mut out).parse().unwrap();
    let mut c = UdtStream::connect_with(("127.0.0.1", port), options()).unwrap();
    let chunk = vec![7u8; 1 << 16];
    for _ in 0..64 {
        c.write_all(&chunk).unwrap();
    }
    let killed = kill(child);
    let e = loop {
        if let Err(e) = c.write_all(&chunk) {
            break e;
        }
        assert!(killed.elapsed() < Duration::from_secs(60), "writes still succeed a minute after the kill");
    };
    let after = killed.elapsed();
    eprintln!("busy writer: peer lost {after:?} after the kill ({e})");
    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
    assert!(after < BOUND, "detected only after {after:?}");
}
