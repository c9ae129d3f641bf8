//! Real transfers over loopback UDP (127.0.0.1 only), data compared byte for byte.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::thread;
use std::time::Duration;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use udt::{Options, UdtListener, UdtStream};

fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    Xoshiro256PlusPlus::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

fn timeouts() -> Options {
    Options {
        read_timeout: Some(Duration::from_secs(60)),
        write_timeout: Some(Duration::from_secs(60)),
        ..Options::default()
    }
}

#[test]
fn stream_64mib_byte_for_byte() {
    let listener = UdtListener::bind_with("127.0.0.1:0", timeouts()).unwrap();
    let addr = listener.local_addr().unwrap();
    let payload = data(64 << 20, 1);
    let expected = payload.clone();
    let sender = thread::spawn(move || {
        let mut c = UdtStream::connect_with(addr, timeouts()).unwrap();
        let t = std::time::Instant::now();
        c.write_all(&payload).unwrap();
        c.close().unwrap();
        t.elapsed()
    });
    let (mut s, _) = listener.accept().unwrap();
    let mut got = Vec::with_capacity(expected.len());
    s.read_to_end(&mut got).unwrap();
    let took = sender.join().unwrap();
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "data differs");
    eprintln!(
        "64 MiB over loopback in {took:?} = {:.0} Mb/s",
        (64 << 20) as f64 * 8.0 / took.as_secs_f64() / 1e6
    );
}

#[test]
fn sixty_four_concurrent_connections_through_one_listener_port() {
    let listener = UdtListener::bind_with("127.0.0.1:0", timeouts()).unwrap();
    let addr = listener.local_addr().unwrap();
    let clients: Vec<_> = (0..64u64)
        .map(|i| {
            thread::spawn(move || {
                let mut c = UdtStream::connect_with(addr, timeouts()).unwrap();
                let payload = data(200_000 + i as usize * 1000, i);
                c.write_all(&(payload.len() as u64).to_le_bytes()).unwrap();
                c.write_all(&payload).unwrap();
                // Wait for the server's verdict: the hash-free echo of the length it read.
                let mut echo = [0u8; 8];
                c.read_exact(&mut echo).unwrap();
                assert_eq!(u64::from_le_bytes(echo), payload.len() as u64);
                c.close().unwrap();
                payload
            })
        })
        .collect();
    let mut servers = Vec::new();
    for _ in 0..64 {
        let (mut s, _) = listener.accept().unwrap();
        servers.push(thread::spawn(move || {
            let mut len = [0u8; 8];
            s.read_exact(&mut len).unwrap();
            let mut got = vec![0u8; u64::from_le_bytes(len) as usize];
            s.read_exact(&mut got).unwrap();
            s.write_all(&len).unwrap();
            s.flush_acknowledged().unwrap();
            got
        }));
    }
    let mut sent: Vec<Vec<u8>> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let mut got: Vec<Vec<u8>> = servers.into_iter().map(|s| s.join().unwrap()).collect();
    sent.sort();
    got.sort();
    assert!(sent == got, "some connection's data differs");
}

#[test]
fn message_mode_delivers_whole_messages() {
    let listener = UdtListener::bind_with("127.0.0.1:0", Options { ..udt::Options::message() }).unwrap();
    let addr = listener.local_addr().unwrap();
    let sender = thread::spawn(move || {
        let c = UdtStream::connect_with(addr, Options::message()).unwrap();
        for i in 0..500u32 {
            let mut m = data(1 + (i as usize * 7919) % 20_000, i as u64);
            m[0] = (i % 251) as u8;
            c.send_msg(&m, None, true).unwrap();
        }
        c.close().unwrap();
    });
    let (s, _) = listener.accept().unwrap();
    let mut buf = vec![0u8; 65536];
    for i in 0..500u32 {
        let n = s.recv_msg(&mut buf).unwrap();
        let mut want = data(1 + (i as usize * 7919) % 20_000, i as u64);
        want[0] = (i % 251) as u8;
        assert_eq!(&buf[..n], &want[..], "message {i}");
    }
    sender.join().unwrap();
    assert_eq!(s.recv_msg(&mut buf).unwrap(), 0, "end of messages after the peer closed");
}

#[test]
fn rendezvous_connects_two_sockets_and_carries_data() {
    // Reserve two free ports, release them, then rendezvous on them.
    let a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let b = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let side = thread::spawn(move || {
        let mut s = UdtStream::rendezvous(b, a, timeouts()).unwrap();
        let mut got = vec![0u8; 1 << 20];
        s.read_exact(&mut got).unwrap();
        got
    });
    let mut s = UdtStream::rendezvous(a, b, timeouts()).unwrap();
    let payload = data(1 << 20, 3);
    s.write_all(&payload).unwrap();
    assert!(side.join().unwrap() == payload);
    s.close().unwrap();
}

#[test]
fn one_gib_file_to_file() {
    let dir = std::env::temp_dir().join(format!("udt-file-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("src.bin");
    let dst = dir.join("dst.bin");
    {
        let mut f = std::fs::File::create(&src).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let mut chunk = vec![0u8; 1 << 20];
        for _ in 0..1024 {
            rng.fill_bytes(&mut chunk);
            f.write_all(&chunk).unwrap();
        }
    }
    let len = std::fs::metadata(&src).unwrap().len();
    let listener = UdtListener::bind_with("127.0.0.1:0", timeouts()).unwrap();
    let addr = listener.local_addr().unwrap();
    let src2 = src.clone();
    let sender = thread::spawn(move || {
        let c = UdtStream::connect_with(addr, timeouts()).unwrap();
        let f = std::fs::File::open(&src2).unwrap();
        let t = std::time::Instant::now();
        assert_eq!(c.send_file(&f, 0, len).unwrap(), len);
        c.close().unwrap();
        t.elapsed()
    });
    let (s, _) = listener.accept().unwrap();
    let out = std::fs::File::create(&dst).unwrap();
    assert_eq!(s.recv_file(&out, 0, len).unwrap(), len);
    let took = sender.join().unwrap();
    drop(out);
    eprintln!("1 GiB file to file in {took:?} = {:.2} Gb/s", len as f64 * 8.0 / took.as_secs_f64() / 1e9);
    let same = files_equal(&src, &dst);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(same, "received file differs");
}

fn files_equal(a: &std::path::Path, b: &std::path::Path) -> bool {
    let (mut fa, mut fb) = (std::fs::File::open(a).unwrap(), std::fs::File::open(b).unwrap());
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let na = fa.read(&mut ba).unwrap();
        let mut nb = 0;
        while nb < na {
            let k = fb.read(&mut bb[nb..na]).unwrap();
            if k == 0 {
                return false;
            }
            nb += k;
        }
        if na == 0 {
            return fb.read(&mut bb).unwrap() == 0;
        }
        if ba[..na] != bb[..na] {
            return false;
        }
    }
}

#[test]
fn connecting_where_nobody_listens_times_out() {
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let t = std::time::Instant::now();
    let err = UdtStream::connect(port).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    assert!(t.elapsed() >= Duration::from_secs(2), "gave up after {:?}", t.elapsed());
}

/// Run by `a_killed_peer_is_detected` in a child process: connect, send, then wait to be killed.
#[test]
#[ignore = "helper process for a_killed_peer_is_detected"]
fn child_peer() {
    let Ok(addr) = std::env::var("UDT_CHILD_CONNECT") else { return };
    let mut c = UdtStream::connect_with(addr.as_str(), timeouts()).unwrap();
    c.write_all(&data(1 << 20, 4)).unwrap();
    thread::sleep(Duration::from_secs(120));
}

#[test]
fn a_killed_peer_is_detected() {
    // Shorter limits than UDT4's (about 46 s): lost after 3 EXP expiries and 1 s of silence.
    let mut options = timeouts();
    options.config.broken_exp_count = 3;
    options.config.broken_min_silence = Duration::from_secs(1);
    let listener = UdtListener::bind_with("127.0.0.1:0", options).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_peer", "--ignored", "--nocapture"])
        .env("UDT_CHILD_CONNECT", addr.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (mut s, _) = listener.accept().unwrap();
    let mut got = vec![0u8; 1 << 20];
    s.read_exact(&mut got).unwrap();
    let killed_at = std::time::Instant::now();
    child.kill().unwrap();
    child.wait().unwrap();
    let err = s.read(&mut got).unwrap_err();
    let after = killed_at.elapsed();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}");
    // 300 + 600 + 900 + 1200 ms of EXP back-off from the last packet heard (a keep-alive up to
    // a second before the kill), and never under the second of silence required.
    assert!(after > Duration::from_secs(1) && after < Duration::from_secs(10), "detected after {after:?}");
}

#[test]
fn ipv6_loopback_stream() {
    let listener = match UdtListener::bind_with("[::1]:0", timeouts()) {
        Ok(l) => l,
        Err(e) => panic!("binding [::1] failed (no IPv6 loopback on this machine?): {e}"),
    };
    let addr = listener.local_addr().unwrap();
    assert!(addr.is_ipv6());
    let payload = data(8 << 20, 6);
    let expected = payload.clone();
    let sender = thread::spawn(move || {
        let mut c = UdtStream::connect_with(addr, timeouts()).unwrap();
        c.write_all(&payload).unwrap();
        c.close().unwrap();
    });
    let (mut s, peer) = listener.accept().unwrap();
    assert!(peer.is_ipv6());
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    sender.join().unwrap();
    assert!(got == expected);
}

/// Reads that lend the packets (`read_chunks`), given back on the next call or dropped, mixed
/// with reads that copy, see the stream byte for byte, plain and secured.
#[test]
fn chunk_reads_mixed_with_copying_reads_see_the_stream() {
    for security in [None, Some(udt::secure::Credential::Key([7; 32]))] {
        let options = Options { security, ..timeouts() };
        let listener = UdtListener::bind_with("127.0.0.1:0", options.clone()).unwrap();
        let addr = listener.local_addr().unwrap();
        let payload = data(8 << 20, 2);
        let expected = payload.clone();
        let sender = thread::spawn(move || {
            let mut c = UdtStream::connect_with(addr, options).unwrap();
            c.write_all(&payload).unwrap();
            c.close().unwrap();
        });
        let (mut s, _) = listener.accept().unwrap();
        let mut got = Vec::with_capacity(expected.len());
        let mut chunks = Vec::new();
        let mut copy = [0u8; 1000];
        for round in 0u64.. {
            let n = match round % 4 {
                // A copying read, which may leave a packet partly read for the next lending.
                0 => {
                    let n = s.read(&mut copy).unwrap();
                    got.extend_from_slice(&copy[..n]);
                    n
                }
                // Chunks dropped instead of given back: their buffers are freed.
                3 => {
                    let n = s.read_chunks(100_000, &mut chunks).unwrap();
                    chunks.drain(..).for_each(|c| got.extend_from_slice(&c));
                    n
                }
                _ => {
                    let n = s.read_chunks(64 << 10, &mut chunks).unwrap();
                    assert!(n == 0 || chunks.iter().map(|c| c.len()).sum::<usize>() == n);
                    chunks.iter().for_each(|c| got.extend_from_slice(c));
                    n
                }
            };
            if n == 0 {
                break;
            }
        }
        sender.join().unwrap();
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "data differs");
    }
}

/// A listener that accepts and closes at once: every connect to it completes (the handshake
/// did), and the stream reads the end of the stream, whether the peer's shutdown arrived before
/// or after the connecting thread saw the handshake finish.
#[test]
fn a_peer_that_accepts_and_closes_at_once_is_connected_then_ended() {
    const ROUNDS: usize = 40;
    let listener = UdtListener::bind_with("127.0.0.1:0", timeouts()).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        for _ in 0..ROUNDS {
            let (s, _) = listener.accept().unwrap();
            drop(s);
        }
    });
    for round in 0..ROUNDS {
        let mut c = UdtStream::connect_with(addr, timeouts())
            .unwrap_or_else(|e| panic!("round {round}: connect failed: {e}"));
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).unwrap_or_else(|e| panic!("round {round}: read failed: {e}"));
        assert!(rest.is_empty(), "round {round}: read {} bytes from a peer that sent none", rest.len());
    }
    server.join().unwrap();
}
