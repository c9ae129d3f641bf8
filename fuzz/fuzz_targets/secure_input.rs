//! Hostile bytes into the secure layer: as the key agreement's messages (hello with the UDT
//! handshake transcript, hello-reply and its statuses, SPAKE2 and Noise frames, confirmation)
//! to a responder and to an initiator (with a key and with a code phrase, with the transcript
//! the fuzzer sends or another), and as datagrams to a connection's sealing, before and after
//! it seals (the filter of clear control packets). Nothing may panic; nothing but a complete,
//! authenticated exchange yields keys.
#![no_main]

use std::io::{self, Read, Write};

use libfuzzer_sys::fuzz_target;
use udt::secure::handshake::{self, KeySink, Keys, Role};
use udt::secure::seal::Sealer;
use udt::secure::Credential;

/// Reads the fuzzer's bytes, swallows what is written.
struct Peer<'a>(&'a [u8]);

impl Read for Peer<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Peer<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct Sink;

impl KeySink for Sink {
    fn install(&mut self, _keys: Keys) -> bool {
        true
    }
    fn activate(&mut self) {}
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let credential = if selector & 1 == 0 {
        Credential::Key([7; 32])
    } else {
        Credential::CodePhrase("1234-fuzz-code-phrase".into())
    };
    let role = if selector & 2 == 0 { Role::Responder } else { Role::Initiator };
    // This end's view of the UDT handshake: all zeros, or all ones (the fuzzer's hello then
    // matches or not).
    let transcript = [if selector & 8 == 0 { 0 } else { 0xFF }; handshake::TRANSCRIPT_LEN];
    let _ = handshake::run(&mut Peer(rest), role, &credential, &transcript, &mut Sink);

    let mut sealer = Sealer::with_epoch_bits([1; 32], [2; 32], 2);
    if selector & 16 != 0 {
        // Sealing already: clear control packets are judged against this boundary.
        let boundary = rest.get(..4).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        sealer.activate(udt_proto::seq::SeqNo::new(boundary & 0x7FFF_FFFF));
    }
    for datagram in rest.chunks(1 + usize::from(selector)) {
        let mut d = datagram.to_vec();
        let _ = sealer.handle_incoming(&mut d, selector & 4 == 0);
    }
    assert_eq!(sealer.counters().opened, 0, "forged without the key");
});
