//! Fuzz target: arbitrary datagrams into a live connection and into a listening endpoint.
//!
//! A client and a server connect in memory (seeded, virtual time) and start a transfer. The
//! input is cut into datagrams (`[len: u8][target: u8][bytes]`); each goes to the client, the
//! server (as bytes, or as a datagram its receive buffer may keep: `handle_datagram_buf`) or the
//! server's endpoint, optionally with the destination socket id patched so it
//! reaches the connection's state machine instead of being routed away. Between datagrams the
//! connections exchange their real traffic and run their timers. Nothing may panic, and the
//! data that does arrive must be a prefix of what was written.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use udt_proto::buffer::RxDatagram;
use udt_proto::connection::{Config, Connection};
use udt_proto::endpoint::{DatagramEvent, Endpoint};
use udt_proto::rng::SplitMix64;
use udt_proto::Instant;

fn exchange(now: Instant, client: &mut Connection, server: &mut Connection, buf: &mut [u8]) {
    for _ in 0..64 {
        let mut moved = false;
        if let Some(n) = client.poll_transmit(now, buf) {
            server.handle_datagram(now, &buf[..n]);
            moved = true;
        }
        if let Some(n) = server.poll_transmit(now, buf) {
            client.handle_datagram(now, &buf[..n]);
            moved = true;
        }
        if !moved {
            break;
        }
    }
    for c in [&mut *client, &mut *server] {
        if c.poll_timeout().is_some_and(|t| t <= now) {
            c.handle_timeout(now);
        }
    }
}

/// Small buffers keep each run cheap (two connections per input) without changing the logic.
fn config() -> Config {
    Config { send_buffer_pkts: 64, recv_buffer_pkts: 64, flow_window: 64, ..Config::default() }
}

fuzz_target!(|data: &[u8]| {
    let client_addr = "127.0.0.1:5000".parse().unwrap();
    let server_addr = "127.0.0.1:9000".parse().unwrap();
    let mut now = Instant::from_micros(1_000_000);
    let mut cep = Endpoint::new(now, Box::new(SplitMix64::new(1)));
    let mut sep = Endpoint::new(now, Box::new(SplitMix64::new(2)));
    sep.listen(config()).unwrap();
    let mut client = cep.connect(config(), server_addr, now).unwrap();
    let mut server: Option<Connection> = None;
    let mut buf = vec![0u8; 2048];
    let mut out = [0u8; 128];
    // Handshake.
    for _ in 0..8 {
        while let Some(n) = client.poll_transmit(now, &mut buf) {
            match sep.handle_datagram(now, client_addr, &buf[..n], &mut out) {
                DatagramEvent::Accepted(c) => server = Some(*c),
                DatagramEvent::Respond(m) => client.handle_datagram(now, &out[..m]),
                DatagramEvent::Route(_) => server.as_mut().unwrap().handle_datagram(now, &buf[..n]),
                DatagramEvent::Dropped => {}
            }
        }
        if let Some(s) = server.as_mut() {
            while let Some(n) = s.poll_transmit(now, &mut buf) {
                client.handle_datagram(now, &buf[..n]);
            }
        }
    }
    let mut server = server.expect("in-memory handshake completes");
    let payload: Vec<u8> = (0..60_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let written = client.write(&payload).unwrap();
    let mut received = Vec::new();
    let mut rest = data;
    while rest.len() >= 2 {
        let len = rest[0] as usize;
        let target = rest[1];
        let take = len.min(rest.len() - 2);
        let mut dgram = rest[2..2 + take].to_vec();
        rest = &rest[2 + take..];
        if target & 0x4 != 0 && dgram.len() >= 16 {
            let id = if target & 1 == 0 { client.local_id() } else { server.local_id() };
            dgram[12..16].copy_from_slice(&id.0.to_be_bytes());
        }
        match target & 0x3 {
            0 => client.handle_datagram(now, &dgram),
            1 if target & 0x8 != 0 => server.handle_datagram_buf(now, &mut RxDatagram::from_bytes(&dgram)),
            1 => server.handle_datagram(now, &dgram),
            _ => {
                let _ = sep.handle_datagram(now, client_addr, &dgram, &mut out);
            }
        }
        now += Duration::from_micros(100 + (target as u64) * 50);
        exchange(now, &mut client, &mut server, &mut buf);
        let mut chunk = [0u8; 65536];
        while let Ok(n) = server.read(&mut chunk) {
            if n == 0 {
                break;
            }
            received.extend_from_slice(&chunk[..n]);
        }
    }
    assert!(received.len() <= written);
    assert_eq!(&received[..], &payload[..received.len()], "delivered bytes differ from the written ones");
});
