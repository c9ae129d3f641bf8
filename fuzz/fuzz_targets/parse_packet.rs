//! Fuzz target: any bytes into `Packet::parse` (protocol notes §1).
//!
//! Parsing must never panic. Whatever parses is emitted into a 0xa5-filled buffer; the emitted
//! bytes must parse to the same value and re-emit identically (the canonical form is a fixed
//! point), and `emit` must not write past the length it reports.

#![no_main]

use libfuzzer_sys::fuzz_target;
use udt_proto::packet::Packet;

fuzz_target!(|data: &[u8]| {
    let Ok(pkt) = Packet::parse(data) else { return };
    let len = pkt.encoded_len();
    let mut buf = vec![0xa5u8; len + 16];
    let n = pkt.emit(&mut buf).expect("emit into a buffer of encoded_len bytes");
    assert_eq!(n, len);
    assert!(buf[n..].iter().all(|&b| b == 0xa5), "emit wrote past its length");
    let again = Packet::parse(&buf[..n]).expect("re-parse of emitted bytes");
    assert_eq!(again, pkt);
    let mut buf2 = vec![0xa5u8; len];
    assert_eq!(again.emit(&mut buf2), Ok(n));
    assert_eq!(buf2, &buf[..n]);
});
