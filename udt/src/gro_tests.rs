//! Tests of the receive path with UDP GRO on real loopback sockets: data packets that reach
//! the I/O thread as one coalesced receive, out of order and with a hole, are handed to the
//! connection one by one and make a byte-exact stream once the hole is filled.
//!
//! The sending end is a bare `udt_proto::Connection` driven by the test over a plain UDP
//! socket, so the test chooses which of its data packets leave in which GSO send.

use std::io::{IoSlice, Read};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use udt_proto::connection::{Config, Connection, State};
use udt_proto::packet::Packet;
use udt_proto::rng::SplitMix64;

use crate::clock;
use crate::listener::UdtListener;
use crate::sys;

/// The test's end of the connection: the core over a UDP socket.
struct Driver {
    socket: UdpSocket,
    conn: Connection,
    peer: SocketAddr,
}

impl Driver {
    /// Handle what arrived within `wait` and the due timers; send the control packets the
    /// core has to send, and return its data packets (not sent).
    fn step(&mut self, wait: Duration) -> Vec<Vec<u8>> {
        self.socket.set_read_timeout(Some(wait)).unwrap();
        let mut buf = [0u8; 2048];
        if let Ok((n, _)) = self.socket.recv_from(&mut buf) {
            self.conn.handle_datagram(clock::now_for(&self.conn), &buf[..n]);
        }
        let now = clock::now_for(&self.conn);
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
        let mut data = Vec::new();
        let mut out = [0u8; 2048];
        while let Some(n) = self.conn.poll_transmit(clock::now_for(&self.conn), &mut out) {
            if Packet::peek_is_data(&out[..n]) {
                data.push(out[..n].to_vec());
            } else {
                self.socket.send_to(&out[..n], self.peer).unwrap();
            }
        }
        data
    }

    /// Send `datagrams` (equal sizes) as one GSO send where the kernel offers it, else one by one.
    fn send_batch(&self, datagrams: &[&Vec<u8>]) {
        let iov: Vec<IoSlice<'_>> = datagrams.iter().map(|d| IoSlice::new(d)).collect();
        let dest = socket2::SockAddr::from(self.peer);
        let segment = datagrams[0].len() as u16;
        if sys::send_iov(self.socket.as_raw_fd(), &iov, Some(segment), &dest).is_err() {
            for d in datagrams {
                self.socket.send_to(d, self.peer).unwrap();
            }
        }
    }
}

#[test]
fn a_gro_batch_out_of_order_and_with_a_hole_makes_a_byte_exact_stream() {
    const PACKETS: usize = 8;
    let listener = UdtListener::bind("127.0.0.1:0").unwrap();
    let peer = listener.local_addr().unwrap();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let config = Config::default();
    let payload = Config::payload_size(config.mss);
    let rng = Box::new(SplitMix64::new(5));
    let conn = Connection::connect(config, udt_proto::SocketId(77), peer, clock::now(), rng).unwrap();
    let mut d = Driver { socket, conn, peer };
    let sent: Vec<u8> = (0..PACKETS * payload).map(|i| (i * 31 % 251) as u8).collect();
    let reader = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20)));
        let mut got = vec![0u8; PACKETS * payload];
        stream.read_exact(&mut got).map(|_| got)
    });

    // Handshake, then the whole payload in the send buffer.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while d.conn.state() != State::Connected {
        assert!(std::time::Instant::now() < deadline, "no handshake");
        assert!(d.step(Duration::from_millis(5)).is_empty());
    }
    assert_eq!(d.conn.write(&sent).unwrap(), sent.len());
    let mut data = Vec::new();
    while data.len() < PACKETS {
        assert!(std::time::Instant::now() < deadline, "the core sent {} of {PACKETS} packets", data.len());
        data.extend(d.step(Duration::from_millis(1)));
    }
    assert!(data.iter().all(|p| p.len() == data[0].len()), "full packets only");

    // One coalesced receive: 0 1 3 2 5 6 7, packet 4 missing.
    d.send_batch(&[&data[0], &data[1], &data[3], &data[2], &data[5], &data[6], &data[7]]);
    // The receiver reports the hole; the core retransmits what it asks for, in batches too.
    while !reader.is_finished() {
        assert!(std::time::Instant::now() < deadline, "the stream did not complete");
        let resent = d.step(Duration::from_millis(2));
        if !resent.is_empty() {
            d.send_batch(&resent.iter().collect::<Vec<_>>());
        }
    }
    let got = reader.join().unwrap().expect("the stream's bytes");
    assert!(got == sent, "the stream differs from what was written");
}
