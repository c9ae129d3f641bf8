//! CPU cost of idle connections: a listener (a child process, so its CPU time is its own) accepts
//! N connections from one client port, each carries one byte, then all stay idle; the listener's
//! and the client's CPU seconds over the idle period are printed. Loopback only.
//!
//! `cargo run --release -p udt --example idle_cpu -- [CONNECTIONS] [SECONDS]` (defaults 1000, 10).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use udt::{Options, UdtListener};

fn options() -> Options {
    Options {
        read_timeout: Some(Duration::from_secs(60)),
        write_timeout: Some(Duration::from_secs(60)),
        ..Options::default()
    }
}

/// User plus system CPU seconds of process `pid` (`/proc/PID/stat`, fields 14 and 15).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // Counted in USER_HZ, which Linux fixes at 100 for user space.
    ticks as f64 / 100.0
}

/// The listener: print the port, accept `n` connections, read one byte from each, print
/// "ready", then hold them until stdin closes.
fn serve(n: usize) {
    let mut listener = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    listener.set_accept_timeout(Some(Duration::from_secs(60)));
    println!("{}", listener.local_addr().unwrap().port());
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        let (mut s, _) = listener.accept().unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        streams.push(s);
    }
    println!("ready");
    let mut rest = String::new();
    let _ = std::io::stdin().read_to_string(&mut rest);
    drop(streams);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve") {
        serve(args[2].parse().unwrap());
        return;
    }
    let n: usize = args.get(1).map_or(1000, |a| a.parse().unwrap());
    let secs: u64 = args.get(2).map_or(10, |a| a.parse().unwrap());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--serve", &n.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port: u16 = line.trim().parse().unwrap();
    // All clients on one multiplexer: one thread, one port.
    let clients = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        let mut s = clients.connect(("127.0.0.1", port)).unwrap();
        s.write_all(b"x").unwrap();
        streams.push(s);
    }
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    // Let the handshakes' and the bytes' timers settle.
    std::thread::sleep(Duration::from_secs(1));
    let (server0, client0, t0) = (cpu_seconds(child.id()), cpu_seconds(std::process::id()), Instant::now());
    std::thread::sleep(Duration::from_secs(secs));
    let (server1, client1, elapsed) =
        (cpu_seconds(child.id()), cpu_seconds(std::process::id()), t0.elapsed().as_secs_f64());
    println!(
        "{n} idle connections for {elapsed:.1} s: listener {:.2} CPU s ({:.1}% of a core), client {:.2} CPU s ({:.1}%)",
        server1 - server0,
        100.0 * (server1 - server0) / elapsed,
        client1 - client0,
        100.0 * (client1 - client0) / elapsed,
    );
    drop(child.stdin.take());
    drop(streams);
    child.wait().unwrap();
}
