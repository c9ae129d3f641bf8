//! Tests of a listener served by several I/O threads (`Options::io_threads`, `shard.rs`):
//! connections spread over the threads, each connection's datagrams reach the thread that owns
//! it (steered by the kernel, or forwarded), and data arrives byte for byte. Loopback only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use crate::listener::UdtListener;
use crate::options::Options;
use crate::secure::handshake::Credential;

fn options(io_threads: usize) -> Options {
    Options {
        read_timeout: Some(Duration::from_secs(30)),
        write_timeout: Some(Duration::from_secs(30)),
        io_threads,
        ..Options::default()
    }
}

/// Data of connection `i`, distinct per connection and per position.
fn pattern(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (k * 31 + i * 7 + k / 1000) as u8).collect()
}

/// 16 connections from one client port to a listener with 2 I/O threads: both threads get
/// some (the requester's socket id picks the thread), and every connection's data arrives
/// intact, though the client's GSO sends mix the connections' datagrams (the kernel steers
/// each send by its first datagram; the threads forward the rest to their owner).
#[test]
fn a_listener_with_two_io_threads_spreads_connections_and_delivers_every_byte() {
    let forwards = spread_and_deliver(options(2));
    eprintln!("forwarded with steering: {forwards}");
}

/// Without the steering program the kernel sends everything from one client port to one
/// thread: forwarding alone gets every datagram to its connection's thread.
#[test]
fn without_steering_forwarding_alone_delivers_every_byte() {
    let mut options = options(2);
    options.hooks.no_steering = true;
    let forwards = spread_and_deliver(options);
    eprintln!("forwarded without steering: {forwards}");
    assert!(forwards > 0, "nothing was forwarded");
}

/// The same with every datagram sealed: a forwarded datagram is opened by the thread that owns
/// its connection, in the buffer the kernel received it into.
#[test]
fn sealed_datagrams_forwarded_between_threads_arrive_intact() {
    let secured = |io_threads| Options { security: Some(Credential::Key([7; 32])), ..options(io_threads) };
    let mut listener = secured(2);
    listener.hooks.no_steering = true;
    let forwards = spread_and_deliver_with(listener, secured(1));
    assert!(forwards > 0, "nothing was forwarded");
}

/// Run the transfers; returns the datagrams the listener's threads forwarded.
fn spread_and_deliver(listener_options: Options) -> u64 {
    spread_and_deliver_with(listener_options, options(1))
}

/// [`spread_and_deliver`] with the clients' port opened with `client_options`.
fn spread_and_deliver_with(listener_options: Options, client_options: Options) -> u64 {
    const CONNECTIONS: usize = 16;
    const BYTES: usize = 1_000_000;
    let listener = UdtListener::bind_with("127.0.0.1:0", listener_options).unwrap();
    let addr = listener.local_addr().unwrap();
    let clients = UdtListener::bind_with("127.0.0.1:0", client_options).unwrap();
    let mut readers = Vec::new();
    let mut writers = Vec::new();
    // Every connection is open (and counted) before any writes: none has closed yet.
    let start = Arc::new(Barrier::new(CONNECTIONS + 1));
    for i in 0..CONNECTIONS {
        // Accepting alongside: a secured connect completes its key agreement with the accept.
        let (mut client, mut server) = thread::scope(|s| {
            let accepted = s.spawn(|| listener.accept().unwrap().0);
            let client = clients.connect(addr).unwrap();
            (client, accepted.join().unwrap())
        });
        // The server speaks first: the connection works both ways from either thread.
        server.write_all(&[i as u8]).unwrap();
        let mut hello = [0u8; 1];
        client.read_exact(&mut hello).unwrap();
        assert_eq!(hello[0], i as u8);
        readers.push(thread::spawn(move || {
            let mut got = Vec::new();
            server.read_to_end(&mut got).unwrap();
            got
        }));
        let start = Arc::clone(&start);
        writers.push(thread::spawn(move || {
            start.wait();
            client.write_all(&pattern(i, BYTES)).unwrap();
            client.close().unwrap();
        }));
    }
    let per_thread: Vec<usize> = listener.shards().iter().map(|m| m.connection_count()).collect();
    eprintln!("connections per I/O thread: {per_thread:?}");
    assert_eq!(per_thread.iter().sum::<usize>(), CONNECTIONS);
    assert!(per_thread.iter().all(|&n| n > 0), "a thread got no connection: {per_thread:?}");
    start.wait();
    for w in writers {
        w.join().unwrap();
    }
    for (i, r) in readers.into_iter().enumerate() {
        let got = r.join().unwrap();
        assert!(got == pattern(i, BYTES), "connection {i}: {} of {BYTES} bytes, or other bytes", got.len());
    }
    listener.shards().iter().map(|m| m.forwards()).sum()
}

/// The threads of a sharded listener share its port, and closing the listener releases it:
/// the port can be bound again at once.
#[test]
fn a_sharded_listener_holds_one_port_and_gives_it_back() {
    let listener = UdtListener::bind_with("127.0.0.1:0", options(3)).unwrap();
    let addr = listener.local_addr().unwrap();
    assert!(listener.shards().iter().all(|m| m.local_addr() == addr));
    // Exclusive to the listener's own threads: a plain bind of the port fails.
    assert!(UdtListener::bind(addr).is_err());
    drop(listener);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match UdtListener::bind(addr) {
            Ok(_) => break,
            Err(e) => assert!(std::time::Instant::now() < deadline, "port not released: {e}"),
        }
        thread::sleep(Duration::from_millis(20));
    }
}
