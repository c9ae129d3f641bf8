//! Hostile bytes into every RBUDP parser (`udt-bulk/src/rbudp/wire.rs`, `bitmap.rs`, our
//! digest message) and into both sessions (`receiver.rs`, `sender.rs`) as a peer would send
//! them: control bytes split anywhere, datagrams of any length and number, time passing.
//! Nothing may panic, a receiver never accepts more than its limits, a request that parses
//! re-encodes to the same name, and a receiver holds a digest only once it has every byte.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use udt_bulk::rbudp::bitmap::Bitmap;
use udt_bulk::rbudp::{wire, Params, Receiver, Sender};
use udt_bulk::storage::{Memory, Sink, Source};
use udt_bulk::{Instant, Session};

/// A sink that keeps nothing, so an announced size costs no memory.
struct Discard;

impl Sink for Discard {
    fn write_at(&mut self, _offset: u64, _data: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
    fn set_len(&mut self, _len: u64) -> std::io::Result<()> {
        Ok(())
    }
}

const MAX_SIZE: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    // The parsers on their own.
    if let Some(field) = data.get(..wire::REQUEST_LEN).and_then(|f| <[u8; wire::REQUEST_LEN]>::try_from(f).ok()) {
        if let Ok(name) = wire::decode_request(&field) {
            let again = wire::encode_request(&name).expect("a name that parsed fits the field");
            assert_eq!(wire::decode_request(&again).expect("re-parse"), name);
        }
    }
    if let Some(marker) = data.get(..wire::MARKER_LEN).and_then(|m| <[u8; wire::MARKER_LEN]>::try_from(m).ok()) {
        let _ = wire::decode_marker(&marker);
    }
    let _ = wire::split_datagram(data);
    if let Ok(Some(digest)) = wire::decode_digest(data) {
        assert_eq!(wire::encode_digest(&digest)[..], data[..]);
    }
    let packets = u32::from(data.first().copied().unwrap_or(0)) * 3;
    if let Ok(map) = Bitmap::from_wire(packets, data.get(1..).unwrap_or_default()) {
        assert!(map.received() <= packets);
        assert!(map.next_missing(0).is_none_or(|s| s < packets));
    }

    // Both sessions, fed records of [kind, length, bytes...].
    let params = Params { rate_bps: Some(1_000_000_000), payload: 64, max_size: MAX_SIZE, ..Params::default() };
    let mut sink = Discard;
    let mut rx = Receiver::new("f", &mut sink, &params).expect("a receiver");
    let served = Box::new(|_: &str| Ok(Box::new(Memory(vec![7; 1000])) as Box<dyn Source>));
    let mut tx = Sender::new(&params, served).expect("a sender");
    tx.handle_control(Instant::ZERO, 0, &wire::encode_request("f").expect("a request"));
    let mut now = Instant::ZERO;
    let mut buf = vec![0u8; tx.max_datagram()];
    let mut rest = data;
    while let [kind, len, tail @ ..] = rest {
        let (chunk, after) = tail.split_at(usize::from(*len).min(tail.len()));
        rest = after;
        now += Duration::from_micros(u64::from(*kind) * 1000);
        match kind % 4 {
            0 => rx.handle_control(now, 0, chunk),
            1 => rx.handle_datagram(now, chunk),
            2 => tx.handle_control(now, 0, chunk),
            _ => {
                tx.handle_timeout(now);
                for _ in 0..8 {
                    if let Some(n) = tx.poll_datagram(now, &mut buf) {
                        rx.handle_datagram(now, &buf[..n]);
                    }
                }
            }
        }
        rx.handle_timeout(now);
        while rx.poll_control().is_some() {}
        while tx.poll_control().is_some() {}
        while rx.poll_event().is_some() {}
        while tx.poll_event().is_some() {}
        let c = rx.counters();
        assert!(c.delivered <= c.size.unwrap_or(0) && c.delivered <= MAX_SIZE);
        assert!(rx.peer_digest().is_none() || Some(c.delivered) == c.size, "a digest before every byte");
    }
});
