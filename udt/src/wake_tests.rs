//! Tests of what the I/O thread costs per packet when many connections share a port: datagrams
//! of several connections to one peer share GSO sends, and blocked application threads are
//! woken when what they wait for changed, readers at the pace of acknowledgements while data
//! streams in, not for every packet. Loopback only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::thread;
use std::time::Duration;

use crate::listener::UdtListener;
use crate::options::Options;
use crate::stream::UdtStream;

fn options() -> Options {
    Options {
        read_timeout: Some(Duration::from_secs(20)),
        write_timeout: Some(Duration::from_secs(20)),
        ..Options::default()
    }
}

/// `n` connected pairs: clients sharing one port (one I/O thread), servers on another.
fn pairs(n: usize, options: Options) -> (UdtListener, UdtListener, Vec<(UdtStream, UdtStream)>) {
    let listener = UdtListener::bind_with("127.0.0.1:0", options.clone()).unwrap();
    let addr = listener.local_addr().unwrap();
    let clients = UdtListener::bind_with("127.0.0.1:0", options).unwrap();
    let pairs = (0..n)
        .map(|_| {
            let client = clients.connect(addr).unwrap();
            let (server, _) = listener.accept().unwrap();
            (client, server)
        })
        .collect();
    (listener, clients, pairs)
}

/// One packet from each of 100 connections of one port to another, lined up for one round:
/// they leave in a few GSO sends (at most 64 datagrams each), not one send each.
#[test]
fn connections_between_two_ports_share_gso_sends() {
    const CONNECTIONS: usize = 100;
    let (_listener, clients, mut pairs) = pairs(CONNECTIONS, options());
    // Let the handshakes' own traffic settle.
    thread::sleep(Duration::from_millis(100));
    let before;
    {
        let _held = clients.mux.hold_rounds();
        before = clients.mux.sendmsg_calls();
        for (i, (client, _)) in pairs.iter_mut().enumerate() {
            client.write_all(&[i as u8; 1000]).unwrap();
        }
    }
    for (i, (_, server)) in pairs.iter_mut().enumerate() {
        let mut got = [0u8; 1000];
        server.read_exact(&mut got).unwrap();
        assert!(got.iter().all(|&b| b == i as u8), "connection {i} got other bytes");
    }
    let sends = clients.mux.sendmsg_calls() - before;
    eprintln!("{CONNECTIONS} data packets (and their ACK2s) in {sends} sendmsg calls");
    // One call per datagram would be 100 for the data alone; two GSO runs carry it, and the
    // ACK2s answering the server's acknowledgements gather in runs of their own.
    assert!(sends <= CONNECTIONS as u32 / 4, "{sends} sendmsg calls");
}

/// A thread waiting for its data to be acknowledged, and another blocked reading the same
/// connection, are not woken by every packet sent, every acknowledgement or every write: only
/// when room to write appears, or everything is acknowledged.
#[test]
fn threads_blocked_on_a_connection_wake_when_what_they_wait_for_changes() {
    let (_listener, _clients, mut pairs) = pairs(1, options());
    let (client, mut server) = pairs.pop().unwrap();
    let client = std::sync::Arc::new(client);
    let drain = thread::spawn(move || {
        let mut sink = Vec::new();
        server.read_to_end(&mut sink).unwrap();
        sink.len()
    });
    // Blocked reading the client side, to which the server never writes.
    let reader = {
        let client = std::sync::Arc::clone(&client);
        thread::spawn(move || {
            let mut b = [0u8; 1];
            (&*client).read(&mut b).unwrap_or(0)
        })
    };
    thread::sleep(Duration::from_millis(50));
    let before = client.shared.hooks.signals();
    let chunk = [9u8; 1000];
    const WRITES: usize = 3000;
    for _ in 0..WRITES {
        (&*client).write_all(&chunk).unwrap();
    }
    client.flush_acknowledged().unwrap();
    let signals = client.shared.hooks.signals() - before;
    let packets = client.stats(false).total.pkts_sent;
    eprintln!("{WRITES} writes, {packets} packets: {signals} wake-ups of blocked threads");
    assert!((signals as u64) < packets / 4, "{signals} wake-ups for {packets} packets");
    let client = std::sync::Arc::into_inner(client);
    drop(client);
    assert_eq!(drain.join().unwrap(), WRITES * chunk.len());
    assert_eq!(reader.join().unwrap(), 0);
}

/// Stream `bytes` of `byte` from a client paced at `max_bandwidth` (bytes/s) and read them all
/// on the server; returns the wake-ups of the blocked reader and the data packets received.
fn stream_and_count_wakes(max_bandwidth: u64, bytes: usize, byte: u8) -> (u64, u64) {
    let mut options = options();
    options.config.max_bandwidth = Some(max_bandwidth);
    let (_listener, _clients, mut pairs) = pairs(1, options);
    let (mut client, mut server) = pairs.pop().unwrap();
    let writer = thread::spawn(move || {
        client.write_all(&vec![byte; bytes]).unwrap();
        client.flush_acknowledged().unwrap();
        client
    });
    let before = server.shared.hooks.signals();
    let mut got = 0;
    let mut buf = vec![0u8; bytes];
    while got < bytes {
        let n = server.read(&mut buf).unwrap();
        assert!(n > 0 && buf[..n].iter().all(|&b| b == byte));
        got += n;
    }
    let signals = (server.shared.hooks.signals() - before) as u64;
    let packets = server.stats(false).total.pkts_recv;
    drop(writer.join().unwrap());
    (signals, packets)
}

/// A reader of a stream whose data comes a packet at a time (about 860 packets a second, one
/// every 1.2 ms, each alone in its round) is woken once per 64 KiB or so, not once per packet.
#[test]
fn a_reader_of_streaming_data_is_woken_per_64_kib_not_per_packet() {
    let (signals, packets) = stream_and_count_wakes(1_250_000, 1_000_000, 3);
    eprintln!("{packets} packets read after {signals} wake-ups");
    assert!(signals < packets / 4, "{signals} wake-ups for {packets} packets");
}

/// A reader of a stream whose full packets come further apart than the ACK interval (one of a
/// thousand connections sharing a port, say) is woken once per [`crate::view::READ_WAIT`] or so,
/// not once per packet: each packet alone is not worth a futex wake and a context switch.
#[test]
fn a_reader_of_a_slow_stream_is_woken_per_read_wait_not_per_packet() {
    // About 50 packets a second: one every 20 ms, two ACK intervals apart; whole packets only
    // (a short one would end a write and wake the reader at once).
    let full = udt_proto::connection::Config::payload_size(options().config.mss);
    let (signals, packets) = stream_and_count_wakes(75_000, 40 * full, 5);
    eprintln!("{packets} packets, 20 ms apart, read after {signals} wake-ups");
    assert!(signals * 2 <= packets, "{signals} wake-ups for {packets} packets");
}

/// Requests and answers back to back (a conversation) are not held for the ACK interval: each
/// side is woken as soon as the other's message arrives. The messages fill whole packets, so no
/// short packet calls for an immediate acknowledgement: only the rule that an end that has sent
/// since the last data arrived awaits an answer wakes the reader at once.
#[test]
fn a_conversation_is_not_held_for_acknowledgements() {
    let (_listener, _clients, mut pairs) = pairs(1, options());
    let (mut client, mut server) = pairs.pop().unwrap();
    let message = 2 * udt_proto::connection::Config::payload_size(client.shared.lock().config().mss);
    let echo = thread::spawn(move || {
        let mut b = vec![0u8; message];
        for _ in 0..300 {
            server.read_exact(&mut b).unwrap();
            server.write_all(&b).unwrap();
        }
        server
    });
    let mut times = Vec::new();
    let mut b = vec![0u8; message];
    for i in 0..300u32 {
        let started = std::time::Instant::now();
        client.write_all(&vec![i as u8; message]).unwrap();
        client.read_exact(&mut b).unwrap();
        assert!(b.iter().all(|&x| x == i as u8));
        times.push(started.elapsed());
    }
    drop(echo.join().unwrap());
    times.sort();
    let median = times[times.len() / 2];
    eprintln!(
        "round trips of {message}-byte messages: median {median:?}, slowest {:?}",
        times[times.len() - 1]
    );
    // Held for the acknowledgement, each round trip takes up to two ACK intervals (10 ms each;
    // a median of 20 ms measured with the answer rule off); at once, well under a millisecond.
    assert!(median < Duration::from_millis(8), "median round trip {median:?}");
}

/// A reader of a stream at 100 Mb/s (a packet every 0.12 ms, gathered by the I/O thread every
/// few milliseconds) is woken about once per ACK interval, not per 64 KiB: each wake-up finds
/// well over [`crate::view::READ_LOW_WATER`] to read.
#[test]
fn a_reader_of_a_paced_stream_is_woken_per_ack_interval() {
    let bytes = 6_000_000;
    let (signals, packets) = stream_and_count_wakes(12_500_000, bytes, 7);
    eprintln!("{packets} packets at 100 Mb/s read after {signals} wake-ups");
    let per_wake = bytes as u64 / signals.max(1);
    assert!(per_wake > 3 * crate::view::READ_LOW_WATER as u64 / 2, "{signals} wake-ups for {bytes} bytes");
}

/// A thread that only receives, gathering a slow stream's datagrams, serves its connections'
/// timers (the ACK every 10 ms, the reader's held wake-up) in the gatherings' wake-ups instead
/// of waking for each: its rounds are about as many as its gatherings.
#[test]
fn a_gathering_receiver_serves_its_timers_in_the_gatherings() {
    let options = Options { receive_gather: Duration::from_millis(4), ..options() };
    let mut sender_options = options.clone();
    sender_options.config.max_bandwidth = Some(2_500_000);
    let listener = UdtListener::bind_with("127.0.0.1:0", options).unwrap();
    let clients = UdtListener::bind_with("127.0.0.1:0", sender_options).unwrap();
    let mut client = clients.connect(listener.local_addr().unwrap()).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    let bytes = 2_500_000;
    let writer = thread::spawn(move || {
        client.write_all(&vec![9u8; bytes]).unwrap();
        client.flush_acknowledged().unwrap();
        client
    });
    let mut buf = vec![0u8; bytes];
    // The first 10% start the stream (no gathering yet); the rest is counted.
    server.read_exact(&mut buf[..bytes / 10]).unwrap();
    let (rounds_before, _) = listener.mux.served();
    let started = std::time::Instant::now();
    server.read_exact(&mut buf[bytes / 10..]).unwrap();
    let gatherings = started.elapsed().as_secs_f64() / 0.004;
    let (rounds, _) = listener.mux.served();
    drop(writer.join().unwrap());
    let rounds = (rounds - rounds_before) as f64;
    eprintln!("{rounds} rounds in the time of {gatherings:.0} gatherings");
    // An ACK timer woken for on its own ends a gathering early every 10 ms (the next starts
    // there): about 1.2 rounds per gathering; served in the gatherings, about one.
    assert!(rounds < 1.1 * gatherings, "{rounds} rounds in the time of {gatherings:.0} gatherings");
}
