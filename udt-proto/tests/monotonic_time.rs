//! The core's time rule: every `now` a driver passes is at least the latest one before it.
//! Debug builds check it at each entry point (an earlier `now` panics instead of passing unseen
//! through saturating arithmetic); `latest_now` tells a driver what to clamp to.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use udt_proto::connection::{Config, Connection};
use udt_proto::{Instant, SocketId};

fn connection(now: Instant) -> Connection {
    let peer: SocketAddr = "127.0.0.1:9000".parse().unwrap();
    let rng = Box::new(Xoshiro256PlusPlus::seed_from_u64(1));
    Connection::connect(Config::default(), SocketId(5), peer, now, rng).unwrap()
}

#[test]
fn latest_now_is_the_latest_time_given() {
    let mut c = connection(Instant::from_micros(1_000));
    assert_eq!(c.latest_now(), Instant::from_micros(1_000));
    c.handle_timeout(Instant::from_micros(2_000));
    assert_eq!(c.latest_now(), Instant::from_micros(2_000));
    let mut buf = [0u8; 2048];
    while c.poll_transmit(Instant::from_micros(3_000), &mut buf).is_some() {}
    assert_eq!(c.latest_now(), Instant::from_micros(3_000));
    // The same time again is fine.
    c.handle_datagram(Instant::from_micros(3_000), &[0u8; 4]);
    c.stats(Instant::from_micros(4_000), false);
    assert_eq!(c.latest_now(), Instant::from_micros(4_000));
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "time went back")]
fn a_datagram_earlier_than_the_last_timeout_panics_in_debug_builds() {
    let mut c = connection(Instant::from_micros(1_000));
    c.handle_timeout(Instant::from_micros(2_000));
    // A kernel receive stamp from before the round's `now`, handed over unclamped.
    c.handle_datagram(Instant::from_micros(1_500), &[0u8; 4]);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "time went back")]
fn a_transmit_earlier_than_the_last_datagram_panics_in_debug_builds() {
    let mut c = connection(Instant::from_micros(1_000));
    c.handle_datagram(Instant::from_micros(5_000), &[0u8; 4]);
    let mut buf = [0u8; 2048];
    let _ = c.poll_transmit(Instant::from_micros(4_999), &mut buf);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "time went back")]
fn a_close_earlier_than_creation_panics_in_debug_builds() {
    let mut c = connection(Instant::from_micros(1_000));
    c.close(Instant::from_micros(999));
}
