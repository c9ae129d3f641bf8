//! Many active connections through one port (a small `udt perf client -P 1000`): 128 client
//! connections, sharing one client port and I/O thread, each send their own data at once to one
//! listener port. Every connection delivers its bytes exactly, and none is starved: when half of
//! them have finished, every one has delivered a fair part of its data (a generous factor, not a
//! timing). Loopback only; bounded in bytes and, as a safety net, in time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use udt::{Options, UdtListener};

const CONNECTIONS: usize = 128;
const BYTES: usize = 384 * 1024;
/// When half the connections have delivered everything, each has delivered at least this part
/// of its data (the fair share is about half or more). Generous: the congestion control's
/// start-up alone leaves late starters well behind (see the stats printed for the slowest).
const STARVED_BELOW: u64 = BYTES as u64 / 32;
/// The test fails rather than hang past this.
const LIMIT: Duration = Duration::from_secs(120);

fn options() -> Options {
    Options {
        read_timeout: Some(Duration::from_secs(60)),
        write_timeout: Some(Duration::from_secs(60)),
        ..Options::default()
    }
}

/// Connection `k`'s data: distinct per connection and per position.
fn pattern(k: usize) -> Vec<u8> {
    (0..BYTES).map(|i| (i.wrapping_mul(31) ^ (i >> 11) ^ k.wrapping_mul(97)) as u8).collect()
}

#[test]
fn many_connections_on_one_port_all_complete_and_none_starves() {
    let mut listener = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    listener.set_accept_timeout(Some(Duration::from_secs(30)));
    let addr = listener.local_addr().unwrap();
    // The clients share one port of their own (and its I/O thread).
    let clients = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();

    // Each connection first sends its index (4 bytes), then its data.
    let progress: Arc<Vec<AtomicU64>> = Arc::new((0..CONNECTIONS).map(|_| AtomicU64::new(0)).collect());
    let results: Arc<Mutex<Vec<Option<bool>>>> = Arc::new(Mutex::new(vec![None; CONNECTIONS]));
    let mut readers = Vec::new();
    let mut streams = Vec::new();
    for _ in 0..CONNECTIONS {
        streams.push(clients.connect(addr).unwrap());
        let (mut server, _) = listener.accept().unwrap();
        let (progress, results) = (Arc::clone(&progress), Arc::clone(&results));
        readers.push(std::thread::spawn(move || {
            let mut id = [0u8; 4];
            server.read_exact(&mut id).unwrap();
            let k = u32::from_le_bytes(id) as usize;
            let mut got = Vec::with_capacity(BYTES);
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match server.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        got.extend_from_slice(&buf[..n]);
                        progress[k].store(got.len() as u64, Ordering::SeqCst);
                    }
                    Err(e) => panic!("connection {k}: {e}"),
                }
            }
            results.lock().unwrap()[k] = Some(got == pattern(k));
        }));
    }
    assert_eq!(streams[0].local_addr().unwrap(), streams[CONNECTIONS - 1].local_addr().unwrap());

    let streams: Vec<Arc<udt::UdtStream>> = streams.into_iter().map(Arc::new).collect();
    let writers: Vec<_> = streams
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let c = Arc::clone(c);
            std::thread::spawn(move || {
                (&*c).write_all(&(k as u32).to_le_bytes()).unwrap();
                (&*c).write_all(&pattern(k)).unwrap();
            })
        })
        .collect();

    // When half have delivered everything, look at the slowest.
    let started = Instant::now();
    let at_half = loop {
        let got: Vec<u64> = progress.iter().map(|p| p.load(Ordering::SeqCst)).collect();
        if got.iter().filter(|&&g| g == BYTES as u64).count() >= CONNECTIONS / 2 {
            break got;
        }
        assert!(started.elapsed() < LIMIT, "half the connections did not finish: {got:?}");
        std::thread::sleep(Duration::from_millis(5));
    };
    // The sender's view of the slowest and the fastest then: what held them (the congestion
    // window and period, the packets in flight, the send buffer).
    let mut order: Vec<usize> = (0..CONNECTIONS).collect();
    order.sort_by_key(|&k| at_half[k]);
    for &k in order.iter().take(3).chain(order.iter().rev().take(1)) {
        let st = streams[k].stats(false);
        eprintln!(
            "connection {k}: {} bytes delivered, {} packets sent; {:?}",
            at_half[k], st.total.pkts_sent, st.now
        );
    }
    for w in writers {
        w.join().unwrap();
    }
    for c in streams {
        Arc::try_unwrap(c).unwrap().close().unwrap();
    }
    for r in readers {
        r.join().unwrap();
    }
    let results = results.lock().unwrap();
    for (k, r) in results.iter().enumerate() {
        assert_eq!(*r, Some(true), "connection {k} did not deliver its data exactly");
    }
    let slowest = *at_half.iter().min().unwrap();
    let mut sorted = at_half.clone();
    sorted.sort_unstable();
    eprintln!(
        "when half had finished: slowest {slowest} bytes, quartile {}, median {} of {BYTES}; all done in {:?}",
        sorted[CONNECTIONS / 4],
        sorted[CONNECTIONS / 2],
        started.elapsed()
    );
    assert!(
        slowest >= STARVED_BELOW,
        "a connection was starved: {slowest} of {BYTES} bytes when half had finished ({sorted:?})"
    );
}
