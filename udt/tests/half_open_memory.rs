//! Memory of half-open connections: 1,024 handshakes that complete the SYN-cookie exchange
//! and then never send anything (a flood from one hostile client) keep the listener under
//! 50 MB resident, whether they wait in the accept queue or have been accepted; and a first
//! request, before its cookie comes back, leaves no state behind at all. The listener runs in a
//! child process (this test binary, re-run with an environment variable) so that its resident
//! size is its own; the flood is hand-made handshake packets from one UDP socket on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use udt::proto::packet::handshake::{RequestType, SocketType};
use udt::proto::packet::{Control, ControlPacket, Handshake, Packet};
use udt::proto::seq::{SeqNo, SocketId};
use udt::{Options, UdtListener};

/// Set in the child: run as the listener.
const SERVER_ENV: &str = "UDT_HALF_OPEN_MEMORY_SERVER";
/// Half-open connections made (the endpoint's default bound on live accepted connections).
const HANDSHAKES: u32 = 1024;
/// Prefix of the child's answers on its standard output.
const MARK: &str = "udt-half-open: ";
const BUDGET_BYTES: u64 = 50 << 20;

fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// The child: a listener with the default options, as `udt recv` has. Prints its port and
/// resident size; after the parent's flood (a line on stdin) prints the resident size with
/// the connections waiting in the accept queue, then accepts them all and prints how many and
/// the resident size again.
fn serve(cc: &str) {
    let mut options = Options::default();
    options.set_congestion_control(cc).unwrap();
    let mut listener = UdtListener::bind_with("127.0.0.1:0", options).unwrap();
    println!("{MARK}{} {}", listener.local_addr().unwrap().port(), resident_bytes());
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let queued = resident_bytes();
    listener.set_accept_timeout(Some(Duration::from_secs(2)));
    let mut accepted = Vec::new();
    while let Ok((s, _)) = listener.accept() {
        accepted.push(s);
    }
    std::thread::sleep(Duration::from_millis(200));
    println!("{MARK}{queued} {} {}", accepted.len(), resident_bytes());
    let mut rest = String::new();
    let _ = std::io::stdin().read_to_string(&mut rest);
    drop(accepted);
}

fn handshake(socket_id: u32, request_type: RequestType, cookie: u32) -> Handshake {
    Handshake {
        version: 4,
        socket_type: SocketType::Stream,
        initial_seq: SeqNo::new(socket_id * 7),
        mss: 1500,
        flow_window: 8192,
        request_type,
        socket_id: SocketId(socket_id),
        cookie,
        peer_ip: Handshake::encode_peer_ip(Ipv4Addr::LOCALHOST.into()),
    }
}

fn send(socket: &UdpSocket, to: SocketAddr, hs: Handshake) {
    let packet = ControlPacket { timestamp: 0, dst: SocketId(0), body: Control::Handshake(hs) };
    let mut buf = [0u8; 128];
    let n = packet.emit(&mut buf).unwrap();
    socket.send_to(&buf[..n], to).unwrap();
}

/// Complete `HANDSHAKES` cookie exchanges from one socket and never answer anything else.
/// Returns how many final answers (the listener's type -1 handshake) came back.
fn flood(to: SocketAddr) -> usize {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut cookies: HashMap<u32, u32> = HashMap::new();
    let mut answered: HashMap<u32, ()> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut buf = [0u8; 2048];
    while answered.len() < HANDSHAKES as usize && Instant::now() < deadline {
        // (Re)send what each id needs next: a request, or the response with its cookie.
        for id in 1..=HANDSHAKES {
            if answered.contains_key(&id) {
                continue;
            }
            match cookies.get(&id) {
                None => send(&socket, to, handshake(id, RequestType::Request, 0)),
                Some(&c) => send(&socket, to, handshake(id, RequestType::Response, c)),
            }
            if id % 64 == 0 {
                // Let the listener keep up (its socket buffer is large, but not endless).
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        while let Ok((n, _)) = socket.recv_from(&mut buf) {
            let Ok(Packet::Control(ControlPacket { body: Control::Handshake(hs), dst, .. })) =
                Packet::parse(&buf[..n])
            else {
                continue; // keep-alives and ACKs of the accepted connections
            };
            match hs.request_type {
                RequestType::Request => {
                    cookies.insert(dst.0, hs.cookie);
                }
                RequestType::Response => {
                    answered.insert(dst.0, ());
                }
                _ => {}
            }
        }
    }
    answered.len()
}

/// Run the listener with congestion control `cc` in a child process (the test named `test`
/// re-run), flood it, and check its resident size.
fn check(test: &str, cc: &str) {
    if let Ok(cc) = std::env::var(SERVER_ENV) {
        serve(&cc);
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(SERVER_ENV, cc)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let answer = |out: &mut BufReader<_>| -> Vec<u64> {
        loop {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "the listener exited early");
            if let Some((_, rest)) = line.split_once(MARK) {
                return rest.split_whitespace().map(|w| w.parse().unwrap()).collect();
            }
        }
    };
    let first = answer(&mut out);
    let (port, before) = (first[0] as u16, first[1]);
    let answered = flood(SocketAddr::from(([127, 0, 0, 1], port)));
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin).unwrap();
    let second = answer(&mut out);
    let (queued, accepted, after_accept) = (second[0], second[1], second[2]);
    drop(stdin);
    child.wait().unwrap();
    eprintln!(
        "{cc}: listener resident: {:.1} MB before, {:.1} MB with {answered} half-open connections queued, \
         {:.1} MB with {accepted} accepted ({:.1} kB each)",
        before as f64 / 1e6,
        queued as f64 / 1e6,
        after_accept as f64 / 1e6,
        queued.max(after_accept).saturating_sub(before) as f64 / HANDSHAKES as f64 / 1e3,
    );
    assert_eq!(answered, HANDSHAKES as usize, "every cookie exchange completed");
    assert_eq!(accepted, HANDSHAKES as u64, "every half-open connection reached the accept queue");
    assert!(queued < BUDGET_BYTES, "{queued} bytes resident with {HANDSHAKES} queued half-open connections");
    assert!(after_accept < BUDGET_BYTES, "{after_accept} bytes resident with {HANDSHAKES} accepted");
}

#[test]
fn a_thousand_half_open_handshakes_stay_under_50_mb() {
    check("a_thousand_half_open_handshakes_stay_under_50_mb", udt::cc::DEFAULT_CC);
}

/// TCP-like controllers ask for an ACK every packet or two, so each connection may keep up to
/// a window's worth of ACKs awaiting their ACK2: committed as ACKs are sent, not up front.
#[test]
fn half_open_handshakes_with_an_ack_per_packet_controller_stay_under_50_mb() {
    check("half_open_handshakes_with_an_ack_per_packet_controller_stay_under_50_mb", "cubic");
}
