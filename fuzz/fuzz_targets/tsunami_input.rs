//! Fuzz target: hostile bytes into every Tsunami decoder and into both Tsunami sessions.
//!
//! The input's first byte chooses whether each session first gets a valid exchange (so the
//! fuzzer reaches the transfer quickly) or starts from nothing. The rest is cut into pieces
//! (`[len: u8][target: u8][bytes]`): control bytes or a datagram for the client (acting as a
//! server) or for the server (acting as a client), a close, our client's digest request to the
//! server, and time passing. Between pieces the server's due datagrams are drawn and fed to the
//! client. Nothing may panic; the client writes only inside the file it was told about; the
//! server's datagrams are always one header plus one block, numbered within the file.
#![no_main]

use std::io;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use udt_bulk::digest;
use udt_bulk::storage::{Memory, Sink, Source};
use udt_bulk::tsunami::auth::proof;
use udt_bulk::tsunami::wire::{self, BlockHeader, FileInfo, Record, TransferRequest, REVISION};
use udt_bulk::tsunami::{Client, Params, Server};
use udt_bulk::{Instant, Session};

const SECRET: &[u8] = b"fuzz";
const FILE: usize = 10_000;

/// A sink that keeps nothing and checks every write lies within the announced size.
#[derive(Default)]
struct Bounds {
    len: Option<u64>,
}

impl Sink for Bounds {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let len = self.len.expect("sized before any write");
        assert!(offset.checked_add(data.len() as u64).is_some_and(|end| end <= len), "write past the end");
        Ok(())
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.len = Some(len);
        Ok(())
    }
}

fn decoders(data: &[u8]) {
    let _ = wire::decode_revision(data);
    let _ = wire::decode_port(data);
    let _ = wire::decode_name(data);
    if let Ok(r) = TransferRequest::decode(data) {
        assert_eq!(TransferRequest::decode(&r.encode()), Ok(r));
    }
    if let Ok(f) = FileInfo::decode(data) {
        assert_eq!(FileInfo::decode(&f.encode()), Ok(f));
    }
    if let Ok(r) = Record::decode(data) {
        assert_eq!(Record::decode(&r.encode()), Ok(r));
    }
    let block_size = data.first().map_or(0, |&b| u32::from(b));
    let _ = BlockHeader::decode(data, block_size);
}

fuzz_target!(|data: &[u8]| {
    decoders(data);
    let Some((&mode, mut rest)) = data.split_first() else { return };
    let params = Params { secret: Some(SECRET.to_vec()), block_size: 100, ..Params::default() };
    let mut now = Instant::from_micros(1);

    let mut sink = Bounds::default();
    let mut client = Client::new(&params, "file", 4000, &mut sink).expect("valid settings");
    let mut catalog = |name: &str| -> Result<Box<dyn Source>, String> {
        match name {
            "file" => Ok(Box::new(Memory((0..FILE).map(|i| i as u8).collect()))),
            _ => Err(format!("{name}: no such file")),
        }
    };
    let challenge = [0x11u8; 64];
    let mut server = Server::new(&params, challenge, 0, &mut catalog).expect("valid settings");
    while client.poll_control().is_some() {}
    while server.poll_control().is_some() {}

    if mode & 1 != 0 {
        client.handle_control(now, 0, &REVISION.to_be_bytes());
        client.handle_control(now, 0, &challenge);
        client.handle_control(now, 0, &[0, 0]);
        let size = u64::from(mode >> 2) * 997;
        let count = size.div_ceil(100) as u32;
        client.handle_control(
            now,
            0,
            &FileInfo { size, block_size: 100, block_count: count, epoch: 0 }.encode(),
        );
    }
    if mode & 2 != 0 {
        server.handle_control(now, 0, &REVISION.to_be_bytes());
        server.handle_control(now, 0, &proof(&challenge, SECRET));
        server.handle_control(now, 0, b"file\n");
        let request = TransferRequest {
            block_size: 100,
            target_rate: 1_000_000,
            error_threshold: 7500,
            slower: (25, 24),
            faster: (5, 6),
        };
        server.handle_control(now, 0, &request.encode());
        server.handle_control(now, 0, &4000u16.to_be_bytes());
    }

    let mut buf = vec![0u8; server.max_datagram()];
    while rest.len() >= 2 {
        let len = usize::from(rest[0]).min(rest.len() - 2);
        let target = rest[1];
        let piece = &rest[2..2 + len];
        rest = &rest[2 + len..];
        match target % 7 {
            0 => client.handle_control(now, 0, piece),
            1 => client.handle_datagram(now, piece),
            2 => server.handle_control(now, 0, piece),
            3 => server.handle_datagram(now, piece),
            4 => client.handle_control_closed(now, 0),
            5 => server.handle_control_closed(now, 0),
            _ => server.handle_control(now, 0, &[digest::TSUNAMI_REQUEST.as_bytes(), b"\n"].concat()),
        }
        now += Duration::from_micros(u64::from(target) * 997);
        for s in [&mut client as &mut dyn Session, &mut server] {
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
            while s.poll_control().is_some() {}
            while s.poll_event().is_some() {}
        }
        for _ in 0..64 {
            let Some(n) = server.poll_datagram(now, &mut buf) else { break };
            assert_eq!(n, 106, "one header and one block");
            let (h, _) = BlockHeader::decode(&buf[..n], 100).expect("the server's own datagram");
            assert!(h.block as usize <= FILE.div_ceil(100), "a block within the file");
            client.handle_datagram(now, &buf[..n]);
        }
    }
});
