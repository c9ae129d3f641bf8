//! `Options::max_accepted`: a listener keeps at most that many accepted connections alive; a
//! request beyond it fails the client's connect within its connect timeout (not a hang), and
//! the default lets more than the core's 1024 live. Loopback only, every wait bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::Duration;

use udt::{Options, UdtListener, UdtStream, DEFAULT_MAX_ACCEPTED};

fn options() -> Options {
    Options {
        read_timeout: Some(Duration::from_secs(30)),
        write_timeout: Some(Duration::from_secs(30)),
        ..Options::default()
    }
}

#[test]
fn the_default_is_above_the_cores_1024_and_can_be_set() {
    assert_eq!(DEFAULT_MAX_ACCEPTED, 16_384);
    assert_eq!(Options::default().max_accepted, DEFAULT_MAX_ACCEPTED);
    const { assert!(DEFAULT_MAX_ACCEPTED > udt::proto::endpoint::DEFAULT_MAX_ACCEPTED) };
    let options = Options { max_accepted: 3, ..Options::default() };
    assert_eq!(options.max_accepted, 3);
}

#[test]
fn a_listener_with_max_three_accepts_three_and_refuses_the_fourth() {
    let mut server_options = options();
    server_options.max_accepted = 3;
    let mut listener = UdtListener::bind_with("127.0.0.1:0", server_options).unwrap();
    listener.set_accept_timeout(Some(Duration::from_secs(20)));
    let addr = listener.local_addr().unwrap();

    let mut kept = Vec::new();
    for i in 0..3u8 {
        let mut client = UdtStream::connect_with(addr, options()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.write_all(&[i]).unwrap();
        let mut b = [0u8; 1];
        server.read_exact(&mut b).unwrap();
        assert_eq!(b[0], i);
        kept.push((client, server));
    }

    // The fourth: refused (UDT4's 1002 rejection), not a hang nor a timeout.
    let mut fourth = options();
    // Long enough that a stalled listener cannot turn the refusal into a timeout; a refusal
    // comes back at once.
    fourth.config.connect_timeout = Duration::from_secs(10);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(UdtStream::connect_with(addr, fourth).map(|_| ()));
    });
    let result = rx.recv_timeout(Duration::from_secs(15)).expect("the fourth connect hung");
    let err = result.expect_err("a fourth connection was accepted");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");

    // Once one has closed, there is room again.
    let (client, server) = kept.pop().unwrap();
    client.close().unwrap();
    drop(server);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut again = loop {
        let mut o = options();
        o.config.connect_timeout = Duration::from_secs(1);
        match UdtStream::connect_with(addr, o) {
            Ok(s) => break s,
            Err(e) => assert!(std::time::Instant::now() < deadline, "no room after a close: {e}"),
        }
    };
    let (mut server, _) = listener.accept().unwrap();
    again.write_all(b"x").unwrap();
    let mut b = [0u8; 1];
    server.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"x");
}

/// More than the core's default of 1024 connections live at once with the runtime's default
/// (each idle connection costs about 11 kB on each side; the clients share one port).
#[test]
fn the_default_lets_more_than_1024_live() {
    const N: usize = 1100;
    let mut listener = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    listener.set_accept_timeout(Some(Duration::from_secs(20)));
    let addr = listener.local_addr().unwrap();
    let mut pairs = Vec::with_capacity(N);
    for _ in 0..N {
        let client = UdtStream::connect_with(addr, options()).unwrap();
        let (server, _) = listener.accept().unwrap();
        pairs.push((client, server));
    }
    // The last still carries data.
    let (client, server) = pairs.last_mut().unwrap();
    client.write_all(b"1100").unwrap();
    let mut b = [0u8; 4];
    server.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"1100");
}
