//! Tests of the I/O thread's rounds on real loopback sockets: connections sharing a port take
//! turns at a full kernel send buffer and lose nothing to it, share a busy thread whatever
//! their controllers ask, and a round serves the
//! connections with work, at once, not every connection; each datagram carries the time it
//! was built.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::options::Options;

/// Two connections from one client port, with these options each, write `bytes` each at once
/// to one listener and close: the bytes each had delivered when the first delivered all of its.
fn race_two_connections(bytes: usize, options: [Options; 2]) -> Vec<u64> {
    use crate::listener::UdtListener;
    use crate::stream::UdtStream;
    use std::io::{Read, Write};
    use std::sync::atomic::AtomicU64;

    let listener = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut clients = Vec::new();
    let mut received = Vec::new();
    for mut options in options {
        options.write_timeout = Some(Duration::from_secs(30));
        options.read_timeout = Some(Duration::from_secs(30));
        clients.push(UdtStream::connect_with(addr, options).unwrap());
        let (mut server, _) = listener.accept().unwrap();
        let count = Arc::new(AtomicU64::new(0));
        received.push(Arc::clone(&count));
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            while let Ok(n @ 1..) = server.read(&mut buf) {
                count.fetch_add(n as u64, Ordering::SeqCst);
            }
        });
    }
    assert_eq!(clients[0].local_addr().unwrap(), clients[1].local_addr().unwrap());
    let data: Arc<[u8]> = vec![7u8; bytes].into();
    let writers: Vec<_> = clients
        .into_iter()
        .map(|mut c| {
            let data = Arc::clone(&data);
            std::thread::spawn(move || {
                c.write_all(&data).unwrap();
                c.close().unwrap();
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let got = loop {
        let got: Vec<u64> = received.iter().map(|c| c.load(Ordering::SeqCst)).collect();
        if got.contains(&(bytes as u64)) {
            break got;
        }
        assert!(std::time::Instant::now() < deadline, "no transfer finished: {got:?}");
        std::thread::sleep(Duration::from_millis(1));
    };
    for w in writers {
        w.join().unwrap();
    }
    got
}

/// Connections sharing a port whose kernel send buffer keeps filling up take turns: the
/// one served first in a round is not served first in the next, so neither starves.
#[test]
fn connections_sharing_a_full_send_buffer_take_turns() {
    const BYTES: usize = 8_000_000;
    // Every 3rd send is refused as by a full buffer: each round's sending ends early.
    let mut options = Options::default();
    options.hooks.refuse_sends = 3;
    let got = race_two_connections(BYTES, [options.clone(), options]);
    // When the first has delivered everything, the other has had its turns too.
    let other = got.iter().copied().min().unwrap_or(0);
    assert!(other >= BYTES as u64 / 4, "one connection starved: {other} of {BYTES} bytes");
}

/// With many idle connections on a port and one busy, a round serves the connections with
/// work (the busy one, and the few idle ones whose timer came), not every connection.
#[test]
fn a_round_serves_the_connections_with_work_not_every_connection() {
    use crate::listener::UdtListener;
    use std::io::{Read, Write};

    const IDLE: usize = 200;
    let listener = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // The clients share one port (and one I/O thread) of their own.
    let clients = UdtListener::bind("127.0.0.1:0").unwrap();
    let mut idle = Vec::new();
    for _ in 0..IDLE {
        let client = clients.connect(addr).unwrap();
        let (server, _) = listener.accept().unwrap();
        idle.push((client, server));
    }
    let mut busy = clients.connect(addr).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0;
        while let Ok(n @ 1..) = server.read(&mut buf) {
            total += n;
        }
        total
    });
    let (muxes, before): (Vec<_>, Vec<_>) =
        [&listener.mux, &clients.mux].into_iter().map(|m| (Arc::clone(m), m.served())).unzip();
    // Data in small writes, so that both ends keep having work for many rounds.
    let chunk = [5u8; 4096];
    let started = std::time::Instant::now();
    let mut sent = 0;
    while started.elapsed() < Duration::from_millis(500) {
        busy.write_all(&chunk).unwrap();
        sent += chunk.len();
    }
    busy.close().unwrap();
    assert_eq!(reader.join().unwrap(), sent);
    for (mux, (rounds0, served0)) in muxes.iter().zip(before) {
        let (rounds, served) = mux.served();
        let (rounds, served) = (rounds - rounds0, served - served0);
        let per_round = served as f64 / rounds as f64;
        eprintln!("{rounds} rounds served {served} connections ({per_round:.2} a round)");
        assert!(rounds > 20, "only {rounds} rounds");
        // Every connection in every round would be more than IDLE a round.
        assert!(per_round < 10.0, "{per_round:.1} connections served a round, of {} alive", IDLE + 1);
    }
    drop(idle);
}

/// Idle connections that an application call gives work to are served at once, not at
/// their next timer (a keep-alive some hundreds of milliseconds away): each exchange of a
/// byte each way, on one idle connection among many, takes a few round trips of the I/O
/// threads, not an EXP interval.
#[test]
fn an_idle_connection_given_work_is_served_at_once() {
    use crate::listener::UdtListener;
    use std::io::{Read, Write};

    const CONNECTIONS: usize = 50;
    let options = Options {
        read_timeout: Some(Duration::from_secs(10)),
        write_timeout: Some(Duration::from_secs(10)),
        ..Options::default()
    };
    let listener = UdtListener::bind_with("127.0.0.1:0", options.clone()).unwrap();
    let addr = listener.local_addr().unwrap();
    let clients = UdtListener::bind_with("127.0.0.1:0", options).unwrap();
    let mut pairs = Vec::new();
    for _ in 0..CONNECTIONS {
        let client = clients.connect(addr).unwrap();
        let (server, _) = listener.accept().unwrap();
        pairs.push((client, server));
    }
    let mut times = Vec::new();
    for pass in 0..3u8 {
        // Idle long enough for every timer but the keep-alives to have stopped.
        std::thread::sleep(Duration::from_millis(300));
        for (client, server) in &mut pairs {
            let started = std::time::Instant::now();
            let mut b = [0u8; 1];
            client.write_all(&[pass]).unwrap();
            server.read_exact(&mut b).unwrap();
            assert_eq!(b[0], pass);
            server.write_all(&[pass + 100]).unwrap();
            client.read_exact(&mut b).unwrap();
            assert_eq!(b[0], pass + 100);
            times.push(started.elapsed());
        }
    }
    times.sort();
    let median = times[times.len() / 2];
    eprintln!("exchanges: median {median:?}, slowest {:?}", times[times.len() - 1]);
    assert!(median < Duration::from_millis(50), "median exchange {median:?}");
}

#[test]
fn a_full_kernel_send_buffer_loses_nothing_the_core_sent() {
    use crate::listener::UdtListener;
    use crate::stream::UdtStream;
    use std::io::{Read, Write};

    let listener = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // The client's kernel refuses every 5th send as if its buffer were full: GSO runs,
    // single datagrams, ACKs and the backlog's own retries alike.
    let mut options = Options::default();
    options.hooks.refuse_sends = 5;
    let data: Vec<u8> = (0..4_000_000u32).map(|i| (i * 7 + i / 1000) as u8).collect();
    let expected = data.clone();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        got
    });
    let mut client = UdtStream::connect_with(addr, options).unwrap();
    client.write_all(&data).unwrap();
    client.flush_acknowledged().unwrap();
    let deferred = client.udp_send_deferred();
    let drops = client.udp_send_drops();
    let stats = client.stats(false);
    client.close().unwrap();
    let got = server.join().unwrap();
    assert!(got == expected, "received {} of {} bytes, or other bytes", got.len(), expected.len());
    assert!(deferred > 0, "the hook refused no send");
    // Every datagram the core counted as sent reached the kernel.
    assert_eq!(drops, 0, "datagrams dropped by the runtime");
    eprintln!("deferred {deferred}, retransmitted {}", stats.total.retransmits);
}

#[test]
fn each_datagram_is_stamped_when_it_is_built() {
    use crate::listener::UdtListener;
    use crate::stream::UdtStream;
    use std::io::{Read, Write};

    let listener = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Building a datagram takes 200 us: a run of them takes that long per datagram, and the
    // datagrams built last in it must not carry the round's start as their time.
    let build = Duration::from_micros(200);
    let mut options = Options::default();
    options.hooks.slow_build = build;
    let data = vec![7u8; 2_000_000];
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        got.len()
    });
    let mut client = UdtStream::connect_with(addr, options).unwrap();
    client.write_all(&data).unwrap();
    client.flush_acknowledged().unwrap();
    let built = client.mux.built();
    client.close().unwrap();
    assert_eq!(server.join().unwrap(), data.len());
    let mut runs = 0;
    for pair in built.windows(2) {
        let ((call_a, a), (call_b, b)) = (pair[0], pair[1]);
        if call_a == call_b {
            runs += 1;
            assert!(b - a >= build, "two datagrams of one call stamped {a:?} and {b:?}");
        }
    }
    assert!(runs > 100, "only {runs} datagrams followed another in the same call");
}

/// Where the I/O thread is the bottleneck (building a datagram is slow), connections sharing
/// it take turns of [`super::io_loop::TURN_QUANTUM`] datagrams: one whose controller asks four
/// times the other's rate gets about the same share of the thread, not four times it.
#[test]
fn connections_share_a_busy_io_thread_whatever_their_rates() {
    // Both rates are far above what a thread building a datagram in 20 us carries (about
    // 50,000 datagrams a second, 0.6 Gb/s, for both).
    let options = ["4g", "1g"].map(|rate| {
        let mut options = Options::default();
        options.hooks.slow_build = Duration::from_micros(20);
        options.set_congestion_control(&format!("blast:rate={rate}")).unwrap();
        options
    });
    let got = race_two_connections(4_000_000, options);
    let (fast, slow) = (got[0] as f64, got[1] as f64);
    eprintln!("when the first finished: 4 Gb/s connection {fast} bytes, 1 Gb/s connection {slow}");
    assert!(slow >= 0.7 * fast && fast >= 0.7 * slow, "unequal shares of the thread: {got:?}");
}
