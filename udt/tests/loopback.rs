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
