//! Client connections share one multiplexer per process: 64 connections from one process to one
//! listener use one UDP port and one I/O thread, each carries its own data byte for byte, and
//! once all have closed the shared I/O thread stops, after which a new connection still works.
//! One test in this file, so no other test's threads are counted; loopback only, every wait
//! bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use udt::{Options, UdtListener, UdtStream};

const CONNECTIONS: usize = 64;
/// Bytes each client sends (its own pattern), and the server echoes a slice of back.
const BYTES: usize = 64 * 1024;
const ECHO: usize = 4 * 1024;

/// Threads of this process: all, and the multiplexers' I/O threads (named `udt-io ...`).
fn threads() -> (usize, usize) {
    let mut all = 0;
    let mut io = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        all += 1;
        let comm = std::fs::read_to_string(task.unwrap().path().join("comm")).unwrap_or_default();
        io += usize::from(comm.starts_with("udt-io"));
    }
    (all, io)
}

fn pattern(index: usize) -> Vec<u8> {
    (0..BYTES).map(|i| (i.wrapping_mul(31) ^ index.wrapping_mul(97) ^ (i >> 8)) as u8).collect()
}

fn options() -> Options {
    Options {
        read_timeout: Some(Duration::from_secs(30)),
        write_timeout: Some(Duration::from_secs(30)),
        ..Options::default()
    }
}

/// Wait (at most 20 s) until `done` holds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within 20 s (threads {:?})", threads());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn many_client_connections_share_one_port_and_one_thread() {
    let (threads_before, io_before) = threads();
    let mut listener = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    listener.set_accept_timeout(Some(Duration::from_secs(20)));
    let addr = listener.local_addr().unwrap();

    // Connected one at a time: the listener's I/O thread completes each handshake, so one
    // thread can connect and accept in turn, and accepted connection i is client i.
    let mut clients = Vec::with_capacity(CONNECTIONS);
    let mut servers = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        clients.push(UdtStream::connect_with(addr, options()).unwrap());
        servers.push(listener.accept().unwrap().0);
    }

    let port = clients[0].local_addr().unwrap();
    for c in &clients {
        assert_eq!(c.local_addr().unwrap(), port, "a client connection has a port of its own");
        assert_eq!(c.peer_addr().unwrap(), addr);
    }
    let (threads_now, io_now) = threads();
    assert_eq!(io_now - io_before, 2, "I/O threads: the listener's and one shared by the clients");
    assert!(
        threads_now - threads_before < 10,
        "{CONNECTIONS} client connections started {} threads",
        threads_now - threads_before
    );

    // Every connection carries its own bytes, each way.
    for (i, c) in clients.iter_mut().enumerate() {
        c.write_all(&pattern(i)).unwrap();
    }
    for (i, s) in servers.iter_mut().enumerate() {
        let mut got = vec![0u8; BYTES];
        s.read_exact(&mut got).unwrap();
        assert!(got == pattern(i), "connection {i} received other bytes");
        s.write_all(&got[..ECHO]).unwrap();
    }
    for (i, c) in clients.iter_mut().enumerate() {
        let mut got = vec![0u8; ECHO];
        c.read_exact(&mut got).unwrap();
        assert!(got[..] == pattern(i)[..ECHO], "connection {i}'s echo differs");
    }

    // Closed or dropped, half and half: the shared I/O thread goes once the last has gone.
    for (i, c) in clients.into_iter().enumerate() {
        if i % 2 == 0 {
            c.close().unwrap();
        } else {
            drop(c);
        }
    }
    drop(servers);
    eventually("the shared client I/O thread stops", || threads().1 == io_before + 1);
    eventually("the process is back to its threads and the listener's", || threads().0 <= threads_before + 2);

    // A new connection binds a new shared port and works.
    let mut client = UdtStream::connect_with(addr, options()).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    client.write_all(b"after").unwrap();
    let mut got = [0u8; 5];
    server.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"after");
    assert_eq!(threads().1, io_before + 2);
    client.close().unwrap();
}
