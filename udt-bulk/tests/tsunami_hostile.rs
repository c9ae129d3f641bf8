//! Random hostile input into both Tsunami sessions (the stable-toolchain companion of the
//! `tsunami_input` fuzz target): after a valid exchange or from nothing, arbitrary control
//! bytes, datagrams, closes, time and the digest request. Nothing may panic; the client writes only inside the file
//! it was told about; the server's datagrams are one header plus one block within the file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;
use std::time::Duration;

use proptest::prelude::*;
use udt_bulk::digest;
use udt_bulk::storage::{Memory, Sink, Source};
use udt_bulk::tsunami::auth::proof;
use udt_bulk::tsunami::wire::{BlockHeader, BlockKind, FileInfo, Record, TransferRequest, REVISION};
use udt_bulk::tsunami::{Client, Params, Server};
use udt_bulk::{Instant, Session};

const SECRET: &[u8] = b"hostile";
const FILE: usize = 10_000;
const BLOCK: u32 = 100;

/// Keeps nothing; checks every write lies within the announced size.
#[derive(Default)]
struct Bounds {
    len: Option<u64>,
}

impl Sink for Bounds {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let len = self.len.expect("sized before any write");
        assert!(offset + data.len() as u64 <= len, "write past the end");
        Ok(())
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.len = Some(len);
        Ok(())
    }
}

/// One thing that happens to the sessions.
#[derive(Debug, Clone)]
enum Input {
    ClientControl(Vec<u8>),
    ClientDatagram(Vec<u8>),
    ServerControl(Vec<u8>),
    ServerDatagram(Vec<u8>),
    /// A plausible record (or several) for the server, fields arbitrary.
    ServerRecords(Vec<(u16, u32, u32)>),
    /// A plausible block for the client, number and type arbitrary.
    ClientBlock(u32, u8),
    /// Our client's digest request line, to the server.
    DigestRequest,
    Close(bool),
    Wait(u16),
}

fn input() -> impl Strategy<Value = Input> {
    let bytes = proptest::collection::vec(any::<u8>(), 0..200);
    prop_oneof![
        bytes.clone().prop_map(Input::ClientControl),
        bytes.clone().prop_map(Input::ClientDatagram),
        bytes.clone().prop_map(Input::ServerControl),
        bytes.prop_map(Input::ServerDatagram),
        proptest::collection::vec((0u16..5, 0u32..120, any::<u32>()), 1..4).prop_map(Input::ServerRecords),
        (0u32..130, any::<u8>()).prop_map(|(b, k)| Input::ClientBlock(b, k)),
        Just(Input::DigestRequest),
        any::<bool>().prop_map(Input::Close),
        any::<u16>().prop_map(Input::Wait),
    ]
}

fn drain(s: &mut dyn Session) {
    while s.poll_control().is_some() {}
    while s.poll_event().is_some() {}
}

fn run(start_client: bool, start_server: bool, size_units: u8, inputs: Vec<Input>) {
    let params = Params { secret: Some(SECRET.to_vec()), block_size: BLOCK, ..Params::default() };
    let mut now = Instant::from_micros(1);
    let mut sink = Bounds::default();
    let mut client = Client::new(&params, "file", 4000, &mut sink).unwrap();
    let mut catalog = |name: &str| -> Result<Box<dyn Source>, String> {
        match name {
            "file" => Ok(Box::new(Memory((0..FILE).map(|i| i as u8).collect()))),
            _ => Err(format!("{name}: no such file")),
        }
    };
    let challenge = [0x11u8; 64];
    let mut server = Server::new(&params, challenge, 0, &mut catalog).unwrap();
    drain(&mut client);
    drain(&mut server);
    if start_client {
        let size = u64::from(size_units) * 997;
        let count = size.div_ceil(u64::from(BLOCK)) as u32;
        client.handle_control(now, 0, &REVISION.to_be_bytes());
        client.handle_control(now, 0, &challenge);
        client.handle_control(now, 0, &[0, 0]);
        client.handle_control(
            now,
            0,
            &FileInfo { size, block_size: BLOCK, block_count: count, epoch: 0 }.encode(),
        );
    }
    if start_server {
        server.handle_control(now, 0, &REVISION.to_be_bytes());
        server.handle_control(now, 0, &proof(&challenge, SECRET));
        server.handle_control(now, 0, b"file\n");
        let request = TransferRequest {
            block_size: BLOCK,
            target_rate: 1_000_000,
            error_threshold: 7500,
            slower: (25, 24),
            faster: (5, 6),
        };
        server.handle_control(now, 0, &request.encode());
        server.handle_control(now, 0, &4000u16.to_be_bytes());
    }
    let mut buf = vec![0u8; server.max_datagram()];
    for input in inputs {
        match input {
            Input::ClientControl(b) => client.handle_control(now, 0, &b),
            Input::ClientDatagram(b) => client.handle_datagram(now, &b),
            Input::ServerControl(b) => server.handle_control(now, 0, &b),
            Input::ServerDatagram(b) => server.handle_datagram(now, &b),
            Input::ServerRecords(records) => {
                for (kind, block, rate) in records {
                    let mut r = Record::stop().encode();
                    r[0..2].copy_from_slice(&kind.to_be_bytes());
                    r[4..8].copy_from_slice(&block.to_be_bytes());
                    r[8..12].copy_from_slice(&rate.to_be_bytes());
                    server.handle_control(now, 0, &r);
                }
            }
            Input::ClientBlock(block, kind) => {
                let kind =
                    [BlockKind::Original, BlockKind::Retransmission, BlockKind::Terminate][kind as usize % 3];
                let mut d = vec![7u8; 6 + BLOCK as usize];
                BlockHeader { block, kind }.encode_into(&mut d);
                client.handle_datagram(now, &d);
            }
            Input::DigestRequest => {
                server.handle_control(now, 0, &[digest::TSUNAMI_REQUEST.as_bytes(), b"\n"].concat());
            }
            Input::Close(to_client) => {
                if to_client {
                    client.handle_control_closed(now, 0);
                } else {
                    server.handle_control_closed(now, 0);
                }
            }
            Input::Wait(ms) => now += Duration::from_millis(u64::from(ms) % 2000),
        }
        for s in [&mut client as &mut dyn Session, &mut server] {
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
            drain(s);
        }
        for _ in 0..64 {
            let Some(n) = server.poll_datagram(now, &mut buf) else { break };
            assert_eq!(n, 6 + BLOCK as usize, "one header and one block");
            let (h, _) = BlockHeader::decode(&buf[..n], BLOCK).unwrap();
            assert!(h.block as usize <= FILE.div_ceil(BLOCK as usize), "a block within the file");
            client.handle_datagram(now, &buf[..n]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
    #[test]
    fn hostile_input_never_panics_nor_writes_outside_the_file(
        start_client in any::<bool>(),
        start_server in any::<bool>(),
        size_units in any::<u8>(),
        inputs in proptest::collection::vec(input(), 0..40),
    ) {
        run(start_client, start_server, size_units, inputs);
    }
}
